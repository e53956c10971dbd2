//! The checks behind the fuzz targets, shared by `cargo fuzz` (fuzz/fuzz_targets/) and by
//! `cargo test` (tests/fuzz_corpus.rs replays the kept corpus through them).
//!
//! Each harness decodes arbitrary bytes into the inputs of one core entry point, calls
//! it, and checks what must hold for every input: no panic, and either a clean error or
//! a result that agrees with a direct computation written here.

use hebnb::counts::count_categories;
use hebnb::encoding::{encode, factorize, Categories};
use hebnb::layout::FeatureLayout;
use hebnb::naive_bayes::{fit_concentrations, log_probability_table, prior_mean, PriorMean};
use hebnb::pair_counts::count_pairs;
use hebnb::solver::SolverSettings;
use ndarray::{Array1, Array2};

/// Reads small numbers from the fuzzer's bytes (zeros once they run out).
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&first, rest)) => {
                self.data = rest;
                first
            }
            None => 0,
        }
    }

    /// A number in `0..n` (n >= 1).
    pub fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }

    /// A value from a few magnitudes, negatives and special values included.
    pub fn value(&mut self) -> i64 {
        const SPECIAL: [i64; 8] = [0, 1, -1, i64::MIN, i64::MAX, 1 << 40, -(1 << 33), 4_000_000];
        let b = self.byte();
        if b < 200 {
            i64::from(b % 7) - 2
        } else {
            SPECIAL[usize::from(b) % SPECIAL.len()]
        }
    }

    /// A weight, including 0, subnormal-adjacent and huge values.
    pub fn weight(&mut self) -> f64 {
        const SPECIAL: [f64; 8] = [0.0, 1e-300, 1e-170, 0.5, 1.0, 3.0, 1e160, 1e290];
        SPECIAL[self.below(SPECIAL.len())]
    }
}

/// A random table: `(values (F, S), missing mask)`.
fn table(bytes: &mut Bytes) -> (Array2<i64>, Array2<bool>) {
    let (n_features, n_rows) = (1 + bytes.below(4), 1 + bytes.below(24));
    let values = Array2::from_shape_fn((n_features, n_rows), |_| bytes.value());
    let missing = Array2::from_shape_fn((n_features, n_rows), |_| bytes.byte() > 230);
    (values, missing)
}

/// Codes: factorize learns sorted distinct categories; encoding the same table with them
/// gives the same codes; every code is a rank of its value.
pub fn codes(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let (values, missing) = table(&mut bytes);
    let transposed = bytes.byte() % 2 == 1;
    let view = if transposed {
        values.t().to_owned().reversed_axes()
    } else {
        values.clone()
    };
    let (codes, categories) = factorize(view.view(), Some(missing.view())).expect("valid input");
    for f in 0..values.nrows() {
        let known = &categories.values[categories.offsets[f]..categories.offsets[f + 1]];
        assert!(known.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
        for s in 0..values.ncols() {
            let code = codes[[f, s]];
            if missing[[f, s]] {
                assert_eq!(code, -1);
            } else {
                assert_eq!(known[code as usize], values[[f, s]]);
            }
        }
    }
    let again = encode(values.view(), Some(missing.view()), &categories).expect("same table");
    assert_eq!(again, codes);
    // unsorted categories are refused, never trusted
    if let Some(f) =
        (0..values.nrows()).find(|&f| categories.offsets[f + 1] - categories.offsets[f] >= 2)
    {
        let mut shuffled: Categories = categories.clone();
        shuffled
            .values
            .swap(categories.offsets[f], categories.offsets[f] + 1);
        assert!(encode(values.view(), None, &shuffled).is_err());
    }
}

/// A random coded training set: `(layout, codes (F, S), labels, weights, n_classes)`.
fn training_set(
    bytes: &mut Bytes,
) -> (FeatureLayout, Array2<i32>, Array1<i64>, Array1<f64>, usize) {
    let n_features = 1 + bytes.below(4);
    let cardinalities: Vec<usize> = (0..n_features).map(|_| bytes.below(5)).collect();
    let layout = FeatureLayout::from_cardinalities(&cardinalities);
    let n_rows = 1 + bytes.below(30);
    let n_classes = 1 + bytes.below(3);
    let codes = Array2::from_shape_fn((n_features, n_rows), |(f, _)| {
        // mostly valid codes, sometimes missing (-1) or out of range
        let b = bytes.byte();
        match b {
            0..=9 => -1,
            10..=12 => cardinalities[f] as i32 + i32::from(b % 2),
            _ => (usize::from(b) % cardinalities[f].max(1)) as i32,
        }
    });
    let labels = Array1::from_shape_fn(n_rows, |_| {
        let b = bytes.byte();
        if b == 255 {
            n_classes as i64
        } else {
            i64::from(b) % n_classes as i64
        }
    });
    let weights = Array1::from_shape_fn(n_rows, |_| bytes.weight());
    (layout, codes, labels, weights, n_classes)
}

fn valid_code(code: i32, k: usize) -> bool {
    code < 0 || (code as usize) < k
}

/// Counts: an error exactly when a code or label is out of range; otherwise the table
/// equals a direct tally.
pub fn counts(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let (layout, codes, labels, weights, n_classes) = training_set(&mut bytes);
    let bad_code = (0..layout.n_features()).any(|f| {
        codes
            .row(f)
            .iter()
            .any(|&c| !valid_code(c, layout.cardinality(f)))
    });
    let bad_label = labels.iter().any(|&y| y < 0 || y as usize >= n_classes);
    let result = count_categories(
        codes.view(),
        labels.view(),
        weights.view(),
        &layout,
        n_classes,
    );
    if bad_code || bad_label {
        assert!(result.is_err());
        return;
    }
    let counts = result.expect("valid input");
    let mut table = Array2::<f64>::zeros((n_classes, layout.n_columns()));
    let mut totals = vec![0.0; n_classes];
    for s in 0..labels.len() {
        let c = labels[s] as usize;
        totals[c] += weights[s];
        for f in 0..layout.n_features() {
            if codes[[f, s]] >= 0 {
                table[[c, layout.columns(f).start + codes[[f, s]] as usize]] += weights[s];
            }
        }
    }
    assert_eq!(counts.class_totals, totals);
    assert_eq!(counts.table, table);
}

/// Pair tables: every stored cell's counts equal a direct tally of the rows with that
/// (parent value, child value), and no cell with data is missing.
pub fn pair_tables(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let (layout, codes, labels, weights, n_classes) = training_set(&mut bytes);
    let result = count_pairs(
        codes.view(),
        labels.view(),
        weights.view(),
        &layout,
        n_classes,
        &hebnb::pair_counts::pairs(layout.n_features()),
    );
    let bad_code = (0..layout.n_features()).any(|f| {
        codes
            .row(f)
            .iter()
            .any(|&c| !valid_code(c, layout.cardinality(f)))
    });
    let bad_label = labels.iter().any(|&y| y < 0 || y as usize >= n_classes);
    if bad_code || bad_label {
        assert!(result.is_err());
        return;
    }
    let tables = result.expect("valid input");
    let n_features = layout.n_features();
    let mut row = 0;
    let mut stored_total = 0.0;
    for a in 0..n_features {
        for b in a + 1..n_features {
            for u in 0..layout.cardinality(a) {
                let cells = tables.indptr[row] as usize..tables.indptr[row + 1] as usize;
                for k in cells {
                    let v = tables.indices[k];
                    for c in 0..n_classes {
                        let direct: f64 = (0..labels.len())
                            .filter(|&s| {
                                codes[[a, s]] == u as i32
                                    && codes[[b, s]] == v
                                    && labels[s] as usize == c
                            })
                            .map(|s| weights[s])
                            .sum();
                        assert_eq!(tables.counts.get(k, c), direct);
                        stored_total += direct;
                    }
                }
                row += 1;
            }
        }
    }
    assert_eq!(row + 1, tables.indptr.len());
    // everything counted is somewhere: the direct total over all pairs agrees
    let mut total = 0.0;
    for a in 0..n_features {
        for b in a + 1..n_features {
            total += (0..labels.len())
                .filter(|&s| codes[[a, s]] >= 0 && codes[[b, s]] >= 0)
                .map(|s| weights[s])
                .sum::<f64>();
        }
    }
    assert!(stored_total == total || (stored_total - total).abs() <= 1e-12 * total.abs());
}

/// Solver inputs: for any non-negative counts the concentrations stay in their bounds
/// (NaN only for a feature without categories) and the log-probability table is finite
/// where the prior mean is positive, with every distribution summing to 1.
pub fn solver(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let n_features = 1 + bytes.below(3);
    let cardinalities: Vec<usize> = (0..n_features).map(|_| 1 + bytes.below(5)).collect();
    let layout = FeatureLayout::from_cardinalities(&cardinalities);
    let n_classes = 1 + bytes.below(3);
    let counts = Array2::from_shape_fn((n_classes, layout.n_columns()), |_| {
        if bytes.byte() < 90 {
            0.0
        } else {
            bytes.weight() * f64::from(1 + bytes.byte() % 5)
        }
    });
    let totals: Vec<f64> = (0..n_classes)
        .map(|c| layout.columns(0).map(|j| counts[[c, j]]).sum())
        .collect();
    let (low, high) = (
        [1e-2, 1e-6, 1.0][bytes.below(3)],
        [1e4, 1e8, 1.0][bytes.below(3)],
    );
    let Ok(settings) = SolverSettings::new(low, high) else {
        assert!(low > high);
        return;
    };
    let kind = if bytes.byte() % 2 == 0 {
        PriorMean::Uniform
    } else {
        PriorMean::PooledMarginal
    };
    let mean = prior_mean(counts.view(), &layout, kind);
    let min_count = [0.0, 1.0, 10.0][bytes.below(3)];
    let fit = fit_concentrations(counts.view(), &totals, &mean, &layout, min_count, &settings)
        .expect("valid input");
    for &m in &fit.concentration {
        assert!(m.is_finite() && m > 0.0, "concentration {m}");
    }
    let table = log_probability_table(counts.view(), &mean, fit.concentration.view(), &layout)
        .expect("valid input");
    for c in 0..n_classes {
        for f in 0..n_features {
            let columns = layout.columns(f);
            let total: f64 = columns.clone().map(|j| table[[c, j]].exp()).sum();
            assert!(
                (total - 1.0).abs() < 1e-9,
                "class {c} feature {f} sums to {total}"
            );
            for j in columns {
                if mean[j] > 0.0 {
                    assert!(table[[c, j]].is_finite());
                }
            }
        }
    }
}
