//! `cargo fuzz run counts`: see fuzz/harness.rs for what is checked.
#![no_main]

#[allow(dead_code)] // each target uses one of the harnesses
#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::counts(data));
