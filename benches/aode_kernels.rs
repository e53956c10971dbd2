//! Criterion benchmarks of the AODE kernels: pair counting, the multi-document
//! Type-II ML solve of one (class, parent, child) triple (general and small-table
//! solvers), the one-call model fit, and scoring rows (SPEC eqs. 7-12).
//!
//! The data are synthetic: each feature a noisy function of the class and of the
//! previous feature, cardinalities 2..=50, drawn by a small fixed linear congruential
//! generator so that every run sees the same table.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use hebnb::aode::{self, AodeCounts, AodeParams, ChildSmoothing, ParentSmoothing, Structure};
use hebnb::counts::count_categories;
use hebnb::evidence::EvidenceTerms;
use hebnb::layout::FeatureLayout;
use hebnb::naive_bayes::{prior_mean, PriorMean};
use hebnb::pair_counts::count_pairs;
use hebnb::small_solver::{maximise_small, SmallEvidence};
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
    let all = &hebnb::pair_counts::pairs(N_FEATURES);
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
    let parents = vec![true; N_FEATURES];
    let structure = Structure {
        capped: &capped,
        parents: &parents,
    };
    let params = AodeParams {
        smoothing: ChildSmoothing::HebTwoLevel,
        parent_smoothing: ParentSmoothing::Laplace,
        min_count: 10.0,
        solver: SolverSettings::default(),
        class_log_prior: vec![-(3.0f64.ln()); N_CLASSES],
        replace_class_prior: false,
    };
    let single_counts = AodeCounts {
        class_count: &counts.class_totals,
        counts: counts.table.view(),
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
        terms.add_document(cells.clone().map(|k| pairs.counts.get(k, 0)).sum());
        for k in cells {
            let child_column = d.layout.columns(1).start + pairs.indices[k] as usize;
            terms.add_cell(pairs.counts.get(k, 0), mean[child_column]);
        }
    }
    terms.finish();
    c.bench_function("maximise_evidence, one (class, parent, child)", |b| {
        b.iter(|| maximise_evidence(black_box(&terms), &SolverSettings::default()))
    });

    // a small table: a ternary child under a ternary parent, 2,000 rows per class
    let mut small = SmallEvidence::new();
    let mut general = EvidenceTerms::new();
    for (u, document) in [
        [300.0, 250.0, 110.0],
        [90.0, 400.0, 180.0],
        [200.0, 150.0, 320.0],
    ]
    .iter()
    .enumerate()
    {
        small.add_document(document.iter().sum());
        general.add_document(document.iter().sum());
        for (&n, mu) in document.iter().zip([0.3, 0.4, 0.3]) {
            small.add_cell(u, n, mu);
            general.add_cell(n, mu);
        }
    }
    general.finish();
    c.bench_function("3 x 3 child, general solver", |b| {
        b.iter(|| maximise_evidence(black_box(&general), &SolverSettings::default()))
    });
    c.bench_function("3 x 3 child, small-table solver", |b| {
        b.iter(|| maximise_small(black_box(&small), &SolverSettings::default(), 1.0))
    });

    c.bench_function(
        "aode::fit two-level, 870 orientations x 3 classes (1 thread)",
        |b| {
            b.iter(|| {
                single.install(|| {
                    aode::fit(single_counts, pairs.view(), &d.layout, &structure, &params).unwrap()
                })
            })
        },
    );

    let fit = aode::fit(single_counts, pairs.view(), &d.layout, &structure, &params).unwrap();
    let model = fit.model(pairs.view(), structure, 1.0);
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
