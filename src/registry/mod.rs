//! Shared-memory, seqlock-read registries that other processes can read
//! (used by `mark` for thread fingerprints and by `sync` for tracked objects).
