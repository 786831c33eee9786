//! What an agent writes into its own memory: notes, and the named blocks of
//! its core memory. Kept apart from `kinds.rs` by job: these are an agent's
//! own edits, not records of the swarm's work.

use crate::error::{ErrorCode, ValidationError};

/// Longest a note's tag may be, in bytes.
pub const MAX_TAG_LEN: usize = 64;
/// Most tags a note may carry.
pub const MAX_TAGS: usize = 16;

payload! {
    /// A note an agent stores in its memory (an archival insert): searchable,
    /// in the graph by what it mentions, forgettable like any item. How much
    /// it matters is the envelope's `importance`; who else sees it, its
    /// `scope`.
    pub struct NoteWritten {
        pub text: String,
        /// Free labels, e.g. `gotcha`, `todo`; searchable with the text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub tags: Vec<String>,
    }
}

impl NoteWritten {
    pub(crate) fn validate(&self) -> Result<(), ValidationError> {
        if self.text.trim().is_empty() {
            return Err(ValidationError::at(ErrorCode::EmptyField, "text", "text must not be empty"));
        }
        if self.tags.len() > MAX_TAGS {
            return Err(ValidationError::at(
                ErrorCode::OutOfRange,
                "tags",
                format!("a note carries at most {MAX_TAGS} tags, got {}", self.tags.len()),
            ));
        }
        for (index, tag) in self.tags.iter().enumerate() {
            let field = format!("tags[{index}]");
            if tag.trim().is_empty() {
                return Err(ValidationError::at(ErrorCode::EmptyField, &field, format!("{field} must not be empty")));
            }
            if tag.len() > MAX_TAG_LEN || tag.contains('\n') {
                return Err(ValidationError::at(
                    ErrorCode::OutOfRange,
                    &field,
                    format!("{field} must be one line of at most {MAX_TAG_LEN} bytes"),
                ));
            }
        }
        Ok(())
    }
}

payload! {
    /// A named block of the agent's core memory (always at the top of its
    /// context), replaced whole; empty `content` clears the block. The
    /// block's token limit (`[core] block_tokens` in `swarm.toml`) is
    /// checked when the API takes the edit.
    pub struct CoreMemoryUpdated {
        /// The block's name: letters, digits, `_` and `-` (`persona`,
        /// `plan`, `user`).
        pub block: String,
        pub content: String,
    }
}

impl CoreMemoryUpdated {
    pub(crate) fn validate(&self) -> Result<(), ValidationError> {
        crate::envelope::validate_name(&self.block).map_err(|error| error.under("block"))
    }
}
