//! `framer`'s reference model (in progress on a branch).
