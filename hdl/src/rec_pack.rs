//! `rec_pack` (in progress on a branch).
