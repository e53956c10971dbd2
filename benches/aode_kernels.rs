//! Criterion benchmarks of the AODE kernels: pair counting, the multi-document
//! Type-II ML solve of one (class, parent, child) triple, fitting every child
//! conditional, and scoring rows (SPEC eqs. 7-12).
//!
//! The data are synthetic: each feature a noisy function of the class and of the
//! previous feature, cardinalities 2..=50, drawn by a small fixed linear congruential
//! generator so that every run sees the same table.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use hebnb::aode::{self, AodeModel, AodeSettings, ChildSmoothing};
use hebnb::counts::count_categories;
use hebnb::evidence::EvidenceTerms;
use hebnb::layout::FeatureLayout;
use hebnb::naive_bayes::{log_probability_table, prior_mean, PriorMean};
use hebnb::pair_counts::count_pairs;
use hebnb::solver::{maximise_evidence, SolverSettings};
use ndarray::{Array1, Array2};

const N_ROWS: usize = 20_000;
const N_FEATURES: usize = 30;
const N_CLASSES: usize = 3;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % bound as u64) as usize
    }
}

struct Data {
    codes: Array2<i32>,
    labels: Array1<i64>,
    weights: Array1<f64>,
    layout: FeatureLayout,
}

fn data() -> Data {
    let mut rng = Lcg(42);
    let cardinality: Vec<usize> = (0..N_FEATURES).map(|_| 2 + rng.next(49)).collect();
    let labels: Array1<i64> = (0..N_ROWS).map(|_| rng.next(N_CLASSES) as i64).collect();
    let mut codes = Array2::<i32>::zeros((N_FEATURES, N_ROWS));
    for f in 0..N_FEATURES {
        let k = cardinality[f];
        for s in 0..N_ROWS {
            let previous = if f == 0 {
                0
            } else {
                codes[[f - 1, s]] as usize
            };
            codes[[f, s]] = if rng.next(10) < 6 {
                ((previous * 7 + labels[s] as usize * 3) % k) as i32
            } else {
                rng.next(k) as i32
            };
        }
    }
    Data {
        codes,
        labels,
        weights: Array1::ones(N_ROWS),
        layout: FeatureLayout::from_cardinalities(&cardinality),
    }
}

fn benchmarks(c: &mut Criterion) {
    let d = data();
    let all = |_: usize, _: usize| true;
    let pairs = count_pairs(
        d.codes.view(),
        d.labels.view(),
        d.weights.view(),
        &d.layout,
        N_CLASSES,
        all,
    )
    .unwrap();
    let counts = count_categories(
        d.codes.view(),
        d.labels.view(),
        d.weights.view(),
        &d.layout,
        N_CLASSES,
    )
    .unwrap();
    let mean = prior_mean(counts.table.view(), &d.layout, PriorMean::PooledMarginal);
    let capped = vec![false; N_FEATURES * N_FEATURES];
    let settings = AodeSettings {
        smoothing: ChildSmoothing::HebTwoLevel,
        min_count: 10.0,
        solver: SolverSettings::default(),
    };

    let single = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    c.bench_function("count_pairs 20000 x 30 (435 pairs, 1 thread)", |b| {
        b.iter(|| {
            single.install(|| {
                count_pairs(
                    d.codes.view(),
                    d.labels.view(),
                    d.weights.view(),
                    &d.layout,
                    N_CLASSES,
                    all,
                )
                .unwrap()
            })
        })
    });

    // one multi-document evidence: class 0, parent 0, child 1 (pair 0), pooled mean
    let k_parent = d.layout.cardinality(0);
    let mut terms = EvidenceTerms::new();
    for u in 0..k_parent {
        let cells = pairs.indptr[u] as usize..pairs.indptr[u + 1] as usize;
        terms.add_document(cells.clone().map(|k| pairs.counts[[k, 0]]).sum());
        for k in cells {
            let child_column = d.layout.columns(1).start + pairs.indices[k] as usize;
            terms.add_cell(pairs.counts[[k, 0]], mean[child_column]);
        }
    }
    terms.finish();
    c.bench_function("maximise_evidence, one (class, parent, child)", |b| {
        b.iter(|| maximise_evidence(black_box(&terms), &SolverSettings::default()))
    });

    c.bench_function(
        "fit_children two-level, 870 orientations x 3 classes (1 thread)",
        |b| {
            b.iter(|| {
                single.install(|| {
                    aode::fit_children(
                        pairs.view(),
                        counts.table.view(),
                        &mean,
                        &capped,
                        &d.layout,
                        &settings,
                    )
                    .unwrap()
                })
            })
        },
    );

    let fit = aode::fit_children(
        pairs.view(),
        counts.table.view(),
        &mean,
        &capped,
        &d.layout,
        &settings,
    )
    .unwrap();
    let concentration = Array2::from_elem((N_CLASSES, N_FEATURES), 10.0);
    let marginal =
        log_probability_table(counts.table.view(), &mean, concentration.view(), &d.layout)
            .unwrap()
            .t()
            .as_standard_layout()
            .into_owned();
    let parent_count: Vec<f64> = (0..d.layout.n_columns())
        .map(|j| counts.table.column(j).sum())
        .collect();
    let parent = marginal.clone();
    let log_mean: Vec<f64> = mean.iter().map(|m| m.ln()).collect();
    let cell_log_prob = fit
        .cell_log_prob
        .view()
        .into_shape_with_order((pairs.indices.len(), 2 * N_CLASSES))
        .unwrap();
    let model = AodeModel {
        pair_tables: pairs.view(),
        cell_log_prob,
        unseen_log_prob: fit.unseen_log_prob.view(),
        log_child_mean: &log_mean,
        capped: &capped,
        parent_log_prob: parent.view(),
        parent_count: &parent_count,
        min_parent_count: 1.0,
        marginal_log_prob: marginal.view(),
        class_log_prior: &[-(3.0f64.ln()); N_CLASSES],
    };
    let rows = d.codes.slice(ndarray::s![.., ..2000]);
    c.bench_function(
        "joint_log_likelihood, 2000 rows x 30 features (1 thread)",
        |b| {
            b.iter(|| {
                single.install(|| aode::joint_log_likelihood(rows, &model, &d.layout).unwrap())
            })
        },
    );
}

criterion_group! {
    name = kernels;
    config = Criterion::default().sample_size(10);
    targets = benchmarks
}
criterion_main!(kernels);
