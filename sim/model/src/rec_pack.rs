//! `rec_pack`'s reference model (in progress on a branch).
