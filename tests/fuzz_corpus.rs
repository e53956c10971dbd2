//! Replays the fuzz corpus (fuzz/corpus/<target>/*, inputs `cargo fuzz` found and kept)
//! and a few thousand pseudo-random inputs through the fuzz harnesses, so that `cargo
//! test` checks on every run what the fuzzers checked once.

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::Path;

type Harness = fn(&[u8]);

const TARGETS: [(&str, Harness); 4] = [
    ("codes", harness::codes),
    ("counts", harness::counts),
    ("pair_tables", harness::pair_tables),
    ("solver", harness::solver),
];

/// A deterministic stream of pseudo-random bytes (xorshift64*).
fn random_inputs(seed: u64, count: usize) -> Vec<Vec<u8>> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
    };
    (0..count)
        .map(|i| (0..(i % 200) + 1).map(|_| next()).collect())
        .collect()
}

#[test]
fn the_kept_corpus_passes_every_harness() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (name, check) in TARGETS {
        let folder = root.join(name);
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            check(&std::fs::read(&path).unwrap());
        }
    }
}

#[test]
fn random_inputs_pass_every_harness() {
    for (i, (_, check)) in TARGETS.into_iter().enumerate() {
        for input in random_inputs(0x9e37_79b9 + i as u64, 1500) {
            check(&input);
        }
    }
}
