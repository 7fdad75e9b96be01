//! weft's cross-crate integration tests live in `tests/tests/`; scenario
//! files for later engines live beside them. This library is empty.
