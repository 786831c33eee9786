//! The part of `mneme` that stands on its own, apart from the server: the
//! API's request parameters and their limits, which the binary's routes use
//! and the fuzz targets in `fuzz/` exercise.

pub mod api_params;
