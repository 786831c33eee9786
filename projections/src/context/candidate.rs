//! One line a tier of context could show, at one or more levels of
//! detail: what the candidates of every tier (`candidates.rs`, the core
//! tier in `core_tier.rs`) are made of, and how one is fitted to the room
//! left in its tier.

use std::collections::HashSet;

use crate::item::ProvenanceRef;
use mneme_index::tokens;

use super::{ContextItem, ContextTier, MIN_TRUNCATED_TOKENS, line};

/// A candidate's text is cut to this many bytes before its tokens are
/// counted: tokenising costs time in proportion to the text, and five
/// shared 1 MB messages made every agent's context pay for 5 MB of
/// tokenising on every request. 64 KiB is about 16,000 tokens, more than
/// one line of context is given; the cut is marked.
pub(super) const MAX_CANDIDATE_TEXT_BYTES: usize = 64 * 1024;

/// One line a tier could show, at one or more levels of detail.
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub tier: ContextTier,
    pub reason: &'static str,
    /// Shown at most once per context: `seq:<n>`, a phase id...
    pub key: String,
    pub item_id: String,
    pub seq: u64,
    pub kind: &'static str,
    /// Texts from most to least detailed, with the tokens of their lines.
    pub texts: Vec<(String, usize)>,
    /// Whether the least detailed text may be cut to fit.
    pub truncatable: bool,
    pub provenance: Vec<ProvenanceRef>,
    /// For an item, the id of what superseded it (see `superseded.rs`).
    pub superseded_by: Option<String>,
}

/// `text`, or its first `MAX_CANDIDATE_TEXT_BYTES` marked as cut.
fn cut_to_counting_size(mut text: String) -> String {
    if text.len() <= MAX_CANDIDATE_TEXT_BYTES {
        return text;
    }
    let mut end = MAX_CANDIDATE_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(" …[truncated]");
    text
}

impl Candidate {
    #[allow(clippy::too_many_arguments)] // one line's every field, named at each call
    pub(super) fn new(
        tier: ContextTier,
        reason: &'static str,
        key: String,
        item_id: String,
        seq: u64,
        kind: &'static str,
        texts: Vec<String>,
        provenance: Vec<ProvenanceRef>,
    ) -> Candidate {
        let texts = texts
            .into_iter()
            .filter(|text| !text.trim().is_empty())
            .map(|text| {
                let text = cut_to_counting_size(text);
                let tokens = tokens::count(&line(seq, kind, &item_id, &text));
                (text, tokens)
            })
            .collect();
        Candidate { tier, reason, key, item_id, seq, kind, texts, truncatable: true, provenance, superseded_by: None }
    }

    /// Marks an item that a later event superseded, at the start of each of
    /// its texts so that no cut loses it: a superseded decision or retracted
    /// fact must not read as current.
    pub(super) fn mark_superseded(&mut self, by: String) {
        let marker = format!("(superseded by {by}) ");
        for (text, tokens) in &mut self.texts {
            text.insert_str(0, &marker);
            *tokens = tokens::count(&line(self.seq, self.kind, &self.item_id, text));
        }
        self.superseded_by = Some(by);
    }

    /// Tokens of the preferred text's line.
    pub fn wanted_tokens(&self) -> usize {
        self.texts.first().map_or(0, |(_, tokens)| *tokens)
    }

    /// The most detailed text whose line fits `room`, or the least
    /// detailed one cut to fit; `None` if nothing fits or it is shown.
    pub fn fit(&self, room: usize, shown: &HashSet<String>) -> Option<ContextItem> {
        if shown.contains(&self.key) || self.texts.is_empty() {
            return None;
        }
        if let Some((text, tokens)) = self.texts.iter().find(|(_, tokens)| *tokens <= room) {
            return Some(self.item(text.clone(), *tokens));
        }
        if !self.truncatable || room < MIN_TRUNCATED_TOKENS {
            return None;
        }
        let (text, _) = self.texts.last().expect("texts is not empty");
        let frame = tokens::count(&line(self.seq, self.kind, &self.item_id, ""));
        // Lines after the first are indented in the rendered text, which
        // adds tokens the cut did not see: shrink by the overshoot and retry.
        let mut target = room.saturating_sub(frame + 1);
        for _ in 0..4 {
            let (cut, _) = tokens::truncate(text, target);
            if cut.trim().is_empty() || cut.trim_start().starts_with("…[truncated]") {
                return None;
            }
            let cut_tokens = tokens::count(&line(self.seq, self.kind, &self.item_id, &cut));
            if cut_tokens <= room {
                return Some(self.item(cut, cut_tokens));
            }
            let overshoot = cut_tokens - room;
            if target <= overshoot + MIN_TRUNCATED_TOKENS / 2 {
                return None;
            }
            target -= overshoot + 1;
        }
        None
    }

    fn item(&self, text: String, tokens: usize) -> ContextItem {
        ContextItem {
            tier: self.tier,
            reason: self.reason,
            item_id: self.item_id.clone(),
            seq: self.seq,
            kind: self.kind,
            text,
            tokens,
            provenance: self.provenance.clone(),
            superseded_by: self.superseded_by.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 17, item 4: a candidate's tokens are counted on at most
    /// `MAX_CANDIDATE_TEXT_BYTES` of its text, cut at a character and marked.
    #[test]
    fn a_huge_text_is_cut_before_its_tokens_are_counted() {
        let short = "rotate the signing keys".to_string();
        assert_eq!(cut_to_counting_size(short.clone()), short);
        let huge = "é".repeat(MAX_CANDIDATE_TEXT_BYTES);
        let cut = cut_to_counting_size(huge);
        assert!(cut.len() <= MAX_CANDIDATE_TEXT_BYTES + " …[truncated]".len(), "{}", cut.len());
        assert!(cut.ends_with(" …[truncated]"));
        let candidate = Candidate::new(
            ContextTier::Relevant,
            "test",
            "seq:1".into(),
            "item".into(),
            1,
            "message_recorded",
            vec!["x".repeat(10 * MAX_CANDIDATE_TEXT_BYTES)],
            Vec::new(),
        );
        assert!(candidate.texts[0].0.len() < 2 * MAX_CANDIDATE_TEXT_BYTES);
    }
}
