//! The seeded generator of synthetic multi-agent SWE trajectories with
//! ground truth (see `eval_dataset.rs`). Written by the generator work.

use crate::eval_dataset::{Dataset, GeneratorSize};

/// A swarm of `size`, the same for the same `seed`.
pub fn generate(seed: u64, size: GeneratorSize) -> Dataset {
    let _ = (seed, size);
    unimplemented!("the generator is being written")
}
