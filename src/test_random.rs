//! The tests' fixed-seed pseudo-random numbers: one linear congruential generator, so that
//! test tables are reproducible without a crate.

/// Advances the generator's `state` and returns the new state (draw from its high bits).
pub(crate) fn next_state(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state
}

/// The next draw, uniform in [0, 1).
pub(crate) fn uniform(state: &mut u64) -> f64 {
    (next_state(state) >> 11) as f64 / (1u64 << 53) as f64
}
