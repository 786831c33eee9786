//! Mneme's index structures, below the memory that uses them: the BM25
//! text index ([`TextIndex`], a memory's view of it [`Bm25Index`]), the
//! vector index over quantized vectors ([`vector`]), the embedders
//! ([`embed`]) and token counting ([`tokens`]).
//!
//! **Invariant:** this crate knows no event and no memory. It depends on
//! no other Mneme crate, so the compiler keeps it a floor below
//! `mneme-projections`. Like the projections, it reads no clock and draws
//! no random number that reaches an answer (a persisted text index's id is
//! random; it only tells a snapshot whether the index is its own), and its
//! only IO is a persisted text index's own directory.

pub mod ann;
mod bm25;
pub mod embed;
mod error;
mod text_dir;
pub mod tokens;
pub mod vector;
pub mod vector_set;

pub use bm25::{Bm25Index, SavedText};
pub use bm25::{TermCounts, TextIndex, identifiers};
pub use error::IndexError;
pub use vector::{QuantizedVector, VectorIndex};
pub use vector_set::{AnnPolicy, PreparedSearch, VectorSet};
