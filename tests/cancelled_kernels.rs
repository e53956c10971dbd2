//! Every long kernel gives up with `HebError::Interrupted` when the call it works for has
//! been cancelled (Ctrl-C from Python cancels the pool's token). The timing of a real
//! SIGINT is tested from Python (tests/test_interrupt.py); this checks that every
//! kernel polls the token at all, including those whose interruption a timed Python
//! test cannot reach, such as the pair-table merge behind `AODE.partial_fit`.
//!
//! Each kernel runs twice in a pool of its own: with a cancelled token it must return
//! `Interrupted`, and uncancelled, the same call must succeed.

use hebnb::aode::{self, AodeCounts, AodeParams, ChildSmoothing, ParentSmoothing, Structure};
use hebnb::counts::{count_categories, CategoricalCounts};
use hebnb::error::{HebError, Result};
use hebnb::layout::FeatureLayout;
use hebnb::lbfgs::LbfgsSettings;
use hebnb::mutual_information::mutual_information;
use hebnb::naive_bayes::{fit_concentrations, log_probability_table, prior_mean, PriorMean};
use hebnb::pair_counts::{count_pairs, merge_pair_tables, pairs};
use hebnb::parallel::lease;
use hebnb::scoring;
use hebnb::solver::SolverSettings;
use hebnb::two_class_weight_fit::{fit_two_class_aode_weights, TwoClassTerms};
use hebnb::weight_fit::{fit_aode_weights, AodeTerms, CellTerms, WeightFit};
use ndarray::{Array1, Array2};

const N_ROWS: usize = 3_000;
const N_CLASSES: usize = 3;
const CARDINALITY: [usize; 5] = [3, 4, 2, 5, 3];

/// A table with every category present: codes `(F, S)`, labels, unit weights.
fn table() -> (Array2<i32>, Array1<i64>, Array1<f64>, FeatureLayout) {
    let n_features = CARDINALITY.len();
    let codes = Array2::from_shape_fn((n_features, N_ROWS), |(f, s)| {
        ((s * (f + 1) + s / 7) % CARDINALITY[f]) as i32
    });
    let labels = Array1::from_shape_fn(N_ROWS, |s| ((s / 3) % N_CLASSES) as i64);
    let weights = Array1::ones(N_ROWS);
    (
        codes,
        labels,
        weights,
        FeatureLayout::from_cardinalities(&CARDINALITY),
    )
}

/// The single counts of [`table`], counted outside any pool.
fn counted(
    codes: &Array2<i32>,
    labels: &Array1<i64>,
    weights: &Array1<f64>,
    layout: &FeatureLayout,
) -> CategoricalCounts {
    count_categories(
        codes.view(),
        labels.view(),
        weights.view(),
        layout,
        N_CLASSES,
    )
    .unwrap()
}

/// Runs `kernel` in a fresh lease of two threads, first with its token cancelled, then
/// not: the first must stop with `Interrupted`, the second succeed.
fn stops_when_cancelled<T: Send>(what: &str, kernel: impl Fn() -> Result<T> + Send + Sync) {
    let cancelled = lease(2).unwrap();
    cancelled.token().cancel();
    match cancelled.install(&kernel) {
        Err(HebError::Interrupted) => {}
        Err(other) => panic!("{what}: a cancelled call failed with {other:?}, not Interrupted"),
        Ok(_) => panic!("{what}: a cancelled call ran to its end"),
    }
    drop(cancelled);
    let running = lease(2).unwrap();
    if let Err(error) = running.install(&kernel) {
        panic!("{what}: the uncancelled call failed: {error:?}");
    }
}

#[test]
fn counting_stops_when_cancelled() {
    let (codes, labels, weights, layout) = table();
    stops_when_cancelled("count_categories", || {
        count_categories(
            codes.view(),
            labels.view(),
            weights.view(),
            &layout,
            N_CLASSES,
        )
    });
    let all = pairs(CARDINALITY.len());
    stops_when_cancelled("count_pairs", || {
        count_pairs(
            codes.view(),
            labels.view(),
            weights.view(),
            &layout,
            N_CLASSES,
            &all,
        )
    });
}

#[test]
fn the_naive_bayes_kernels_stop_when_cancelled() {
    let (codes, labels, weights, layout) = table();
    let counts = counted(&codes, &labels, &weights, &layout);
    let mean = prior_mean(counts.table.view(), &layout, PriorMean::PooledMarginal);
    stops_when_cancelled("naive_bayes::fit_concentrations", || {
        fit_concentrations(
            counts.table.view(),
            &counts.class_totals,
            &mean,
            &layout,
            10.0,
            &SolverSettings::default(),
        )
    });
    stops_when_cancelled("mutual_information", || {
        mutual_information(counts.table.view(), &layout)
    });
    let fitted = fit_concentrations(
        counts.table.view(),
        &counts.class_totals,
        &mean,
        &layout,
        10.0,
        &SolverSettings::default(),
    )
    .unwrap();
    let log_table = log_probability_table(
        counts.table.view(),
        &mean,
        fitted.concentration.view(),
        &layout,
    )
    .unwrap()
    .t()
    .as_standard_layout()
    .into_owned();
    let class_log_prior = vec![-(N_CLASSES as f64).ln(); N_CLASSES];
    stops_when_cancelled("scoring::joint_log_likelihood", || {
        scoring::joint_log_likelihood(
            codes.view(),
            log_table.view(),
            &class_log_prior,
            None,
            &layout,
        )
    });
}

#[test]
fn the_aode_kernels_stop_when_cancelled() {
    let (codes, labels, weights, layout) = table();
    let n_features = CARDINALITY.len();
    let all = pairs(n_features);
    let counts = counted(&codes, &labels, &weights, &layout);
    let tables = count_pairs(
        codes.view(),
        labels.view(),
        weights.view(),
        &layout,
        N_CLASSES,
        &all,
    )
    .unwrap();
    let capped = vec![false; n_features * n_features];
    let parents = vec![true; n_features];
    let structure = Structure {
        capped: &capped,
        parents: &parents,
    };
    for smoothing in [ChildSmoothing::HebTwoLevel, ChildSmoothing::Laplace] {
        let params = AodeParams {
            smoothing,
            parent_smoothing: ParentSmoothing::Heb,
            min_count: 10.0,
            solver: SolverSettings::default(),
            class_log_prior: vec![-(N_CLASSES as f64).ln(); N_CLASSES],
            replace_class_prior: false,
        };
        stops_when_cancelled(&format!("aode::fit ({smoothing:?})"), || {
            let single = AodeCounts {
                class_count: &counts.class_totals,
                counts: counts.table.view(),
            };
            aode::fit(single, tables.view(), &layout, &structure, &params)
        });
        let single = AodeCounts {
            class_count: &counts.class_totals,
            counts: counts.table.view(),
        };
        let fitted = aode::fit(single, tables.view(), &layout, &structure, &params).unwrap();
        let model = fitted.model(tables.view(), structure, 1.0);
        stops_when_cancelled(
            &format!("aode::joint_log_likelihood ({smoothing:?})"),
            || aode::joint_log_likelihood(codes.view(), &model, &layout),
        );
    }
    // a batch in the same vocabulary merged into the stored tables, as partial_fit does
    let same_codes: Vec<Vec<usize>> = CARDINALITY.iter().map(|&k| (0..k).collect()).collect();
    for decay in [1.0, 0.5] {
        stops_when_cancelled(&format!("merge_pair_tables (decay {decay})"), || {
            merge_pair_tables(
                tables.view(),
                &layout,
                tables.view(),
                &layout,
                &same_codes,
                N_CLASSES,
                decay,
            )
        });
    }
}

#[test]
fn the_aode_weight_fits_stop_when_cancelled() {
    // two super-parents' terms and two columns of cells, every row using a cell of each
    let n_parents = 2;
    let terms = ndarray::Array3::from_shape_fn((N_ROWS, n_parents, 2), |(s, p, c)| {
        -1.0 - ((s * 7 + p * 3 + c) % 11) as f64 / 10.0
    });
    let starts = vec![0, 5, 9];
    let cells = Array2::from_shape_fn((2, N_ROWS), |(k, s)| {
        (starts[k] + (s * (k + 2)) % (starts[k + 1] - starts[k])) as i64
    });
    let values = Array2::from_shape_fn((9, 2), |(e, c)| -0.5 - ((e + c) % 4) as f64 / 4.0);
    let labels = Array1::from_shape_fn(N_ROWS, |s| ((s / 3) % 2) as i64);
    let weights = Array1::<f64>::ones(N_ROWS);
    let no_features = Array2::<f64>::zeros((N_ROWS, 0));
    let class_log_prior = [-(2f64.ln()); 2];
    let settings = LbfgsSettings {
        gradient_tolerance: 1e-9,
        max_iter: 50,
        memory: 5,
    };
    let n_general = 2 + n_parents + 9 * 2;
    let (start, precision, curvature) = (
        vec![0.0; n_general],
        vec![1.0; n_general],
        vec![1.0; n_general],
    );
    stops_when_cancelled("weight_fit::fit_aode_weights", || {
        fit_aode_weights(
            AodeTerms {
                parent_terms: terms.view(),
                row_features: no_features.view(),
                cells: CellTerms {
                    cells: cells.view(),
                    values: values.view(),
                    column_starts: &starts,
                },
                class_log_prior: &class_log_prior,
            },
            labels.view(),
            weights.view(),
            WeightFit {
                start: &start,
                precision: &precision,
                inverse_curvature: &curvature,
                settings,
            },
        )
    });
    let differences = Array2::from_shape_fn((N_ROWS, n_parents), |(s, p)| {
        terms[[s, p, 1]] - terms[[s, p, 0]]
    });
    let scales = vec![0.7; 9];
    let n_two_class = 2 + n_parents + 9;
    stops_when_cancelled("two_class_weight_fit::fit_two_class_aode_weights", || {
        fit_two_class_aode_weights(
            TwoClassTerms {
                parent_differences: differences.view(),
                row_features: no_features.view(),
                cells: cells.view(),
                column_starts: &starts,
                cell_scales: &scales,
                class_log_prior: &class_log_prior,
            },
            labels.view(),
            weights.view(),
            WeightFit {
                start: &start[..n_two_class],
                precision: &precision[..n_two_class],
                inverse_curvature: &curvature[..n_two_class],
                settings,
            },
        )
    });
}
