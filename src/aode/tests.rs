//! Tests of the one-call fit and the scorer.

use super::*;
use crate::counts::{count_categories, CategoricalCounts};
use crate::pair_counts::{count_pairs, PairTables};
use crate::parallel::with_threads;
use ndarray::{array, Array1, Array2, Array3, ArrayView1, ArrayView2};

/// Pair tables and single counts of a table, the pairs the structure wants.
fn statistics(
    codes: ArrayView2<i32>,
    labels: ArrayView1<i64>,
    layout: &FeatureLayout,
    n_classes: usize,
    structure: &Structure,
) -> (PairTables, CategoricalCounts) {
    let weights = Array1::ones(codes.ncols());
    let wanted = structure.wanted_pairs().unwrap();
    let pairs = count_pairs(codes, labels, weights.view(), layout, n_classes, &wanted).unwrap();
    let counts = count_categories(codes, labels, weights.view(), layout, n_classes).unwrap();
    (pairs, counts)
}

fn params(smoothing: ChildSmoothing, min_count: f64, n_classes: usize) -> AodeParams {
    AodeParams {
        smoothing,
        parent_smoothing: ParentSmoothing::Laplace,
        min_count,
        solver: SolverSettings::default(),
        class_log_prior: vec![(1.0 / n_classes as f64).ln(); n_classes],
        replace_class_prior: false,
    }
}

fn fit_all(
    pairs: &PairTables,
    counts: &CategoricalCounts,
    layout: &FeatureLayout,
    structure: &Structure,
    params: &AodeParams,
) -> AodeFit {
    let single = AodeCounts {
        class_count: &counts.class_totals,
        counts: counts.table.view(),
    };
    fit(single, pairs.view(), layout, structure, params).unwrap()
}

/// The pair tables and fit of a random table of `cardinality` (3 classes) under the
/// structure `capped` / `parents`, with `smoothing` and `min_count`.
fn fitted_random_table(
    (codes, labels): (ArrayView2<i32>, ArrayView1<i64>),
    layout: &FeatureLayout,
    (capped, parents): (&[bool], &[bool]),
    (smoothing, min_count): (ChildSmoothing, f64),
) -> (PairTables, AodeFit) {
    let structure = Structure { capped, parents };
    let (pairs, counts) = statistics(codes, labels, layout, 3, &structure);
    let fit = fit_all(
        &pairs,
        &counts,
        layout,
        &structure,
        &params(smoothing, min_count, 3),
    );
    (pairs, fit)
}

/// Fits every pair of `codes` (no cap, every feature a super-parent, `min_count` 10) and
/// hands the fit, its scorer's model and the layout to `check`.
fn with_uncapped_model<R>(
    (codes, labels): (ArrayView2<i32>, ArrayView1<i64>),
    cardinality: &[usize],
    n_classes: usize,
    smoothing: ChildSmoothing,
    check: impl FnOnce(&AodeFit, &AodeModel, &FeatureLayout) -> R,
) -> R {
    let n_features = cardinality.len();
    let layout = FeatureLayout::from_cardinalities(cardinality);
    let capped = vec![false; n_features * n_features];
    let parents = vec![true; n_features];
    let structure = Structure {
        capped: &capped,
        parents: &parents,
    };
    let (pairs, counts) = statistics(codes, labels, &layout, n_classes, &structure);
    let params = params(smoothing, 10.0, n_classes);
    let fit = fit_all(&pairs, &counts, &layout, &structure, &params);
    let model = fit.model(pairs.view(), structure, 1.0);
    check(&fit, &model, &layout)
}

/// The two-feature table of [`one_pair_by_hand`]: x0 = (0, 0, 1, 1), x1 = (0, 1, 1, 1),
/// y = (0, 0, 1, 1).
fn one_pair_table() -> (Array2<i32>, Array1<i64>) {
    (array![[0, 0, 1, 1], [0, 1, 1, 1]], array![0_i64, 0, 1, 1])
}

#[test]
fn one_pair_by_hand() {
    // one_pair_table; Laplace AODE, row (0, 1)
    let (codes, labels) = one_pair_table();
    let table = (codes.view(), labels.view());
    with_uncapped_model(
        table,
        &[2, 2],
        2,
        ChildSmoothing::Laplace,
        |fit, model, layout| {
            let joint = joint_log_likelihood(array![[0], [1]].view(), model, layout).unwrap();
            // eq. 8 parent (N + 1) / 8; eq. 9 children by hand
            let expected: [f64; 2] = [
                (3.0 / 8.0 * 0.5 + 2.0 / 8.0 * 2.0 / 3.0) / 2.0,
                (1.0 / 8.0 * 0.5 + 3.0 / 8.0 * 0.25) / 2.0,
            ];
            for (found, want) in joint.iter().zip(expected) {
                assert!((found - want.ln()).abs() < 1e-14, "{joint:?}");
            }
            assert_eq!(fit.concentration[[0, 0, 1]], 2.0);
        },
    );
}

fn random_table(n_rows: usize, cardinality: &[usize], seed: u64) -> (Array2<i32>, Array1<i64>) {
    let mut state = seed;
    let mut next =
        |bound: usize| ((crate::test_random::next_state(&mut state) >> 33) % bound as u64) as usize;
    let labels: Array1<i64> = (0..n_rows).map(|_| next(3) as i64).collect();
    let mut codes = Array2::<i32>::zeros((cardinality.len(), n_rows));
    for (f, &k) in cardinality.iter().enumerate() {
        for s in 0..n_rows {
            let base = if f == 0 {
                labels[s] as usize
            } else {
                codes[[f - 1, s]].max(0) as usize
            };
            codes[[f, s]] = match next(10) {
                0 => -1,
                1..=6 => ((base * 5 + labels[s] as usize) % k) as i32,
                _ => next(k) as i32,
            };
        }
    }
    (codes, labels)
}

/// NaN != NaN: compare bit patterns.
fn bits1(a: &[f64]) -> Vec<u64> {
    a.iter().map(|x| x.to_bits()).collect()
}

fn bits<D: ndarray::Dimension>(a: &ndarray::Array<f64, D>) -> Vec<u64> {
    a.iter().map(|v| v.to_bits()).collect()
}

/// The rows' cells numbered (every feature a super-parent), as the discriminative
/// weights number them.
struct Numbering {
    cells: Array2<i64>,
    column_starts: Vec<usize>,
    first_row: Array1<i64>,
}

impl Numbering {
    fn request(&self) -> CellRequest<'_> {
        self.request_with(true)
    }

    fn request_with(&self, in_sample_terms: bool) -> CellRequest<'_> {
        CellRequest::Numbered {
            cells: self.cells.view(),
            column_starts: &self.column_starts,
            first_row: self.first_row.view(),
            in_sample_terms,
        }
    }
}

fn numbered_cells(codes: ArrayView2<i32>, cardinality: &[usize], n_parents: usize) -> Numbering {
    let parents: Vec<usize> = (0..n_parents).collect();
    let keys = crate::cell_numbers::cell_keys(codes, &parents, cardinality).unwrap();
    let keys =
        Array2::from_shape_vec((n_parents * cardinality.len(), codes.ncols()), keys).unwrap();
    let numbered = crate::cell_numbers::number_cells(keys.view()).unwrap();
    Numbering {
        cells: Array2::from_shape_vec(keys.dim(), numbered.cells).unwrap(),
        column_starts: numbered.column_starts,
        first_row: Array1::from(numbered.first_row),
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    // small (stack solver) and large (general solver) children side by side
    let cardinality = [3, 7, 12, 2, 30, 3];
    let (codes, labels) = random_table(3000, &cardinality, 7);
    let layout = FeatureLayout::from_cardinalities(&cardinality);
    let capped = vec![false; 36];
    let parents = vec![true; 6];
    let structure = Structure {
        capped: &capped,
        parents: &parents,
    };
    let fit_with = |threads: usize| {
        with_threads(threads, || {
            let (pairs, counts) = statistics(codes.view(), labels.view(), &layout, 3, &structure);
            let fit = fit_all(
                &pairs,
                &counts,
                &layout,
                &structure,
                &params(ChildSmoothing::HebTwoLevel, 10.0, 3),
            );
            let joint = joint_log_likelihood(
                codes.view(),
                &fit.model(pairs.view(), structure, 1.0),
                &layout,
            )
            .unwrap();
            (pairs, fit, joint)
        })
        .unwrap()
    };
    let (one, two) = (fit_with(1), fit_with(2));
    assert_eq!(one.0, two.0);
    assert_eq!(bits(&one.1.concentration), bits(&two.1.concentration));
    assert_eq!(
        bits1(&one.1.child_tables.dense),
        bits1(&two.1.child_tables.dense)
    );
    assert_eq!(
        bits(&one.1.child_tables.sparse),
        bits(&two.1.child_tables.sparse)
    );
    assert_eq!(bits(&one.2), bits(&two.2));
    assert!(one.1.n_iter.iter().any(|&n| n > 0));
}

#[test]
fn a_rows_score_does_not_depend_on_its_chunk_or_the_thread_count() {
    // more rows than one scoring chunk holds (4,096), parents of 30 and 40 values (their
    // rows are scored in order of value) and missing values
    let cardinality = [3, 40, 12, 2, 30, 3];
    let (mut codes, labels) = random_table(9000, &cardinality, 11);
    for s in (0..9000).step_by(7) {
        codes[[s % 6, s]] = -1;
    }
    with_uncapped_model(
        (codes.view(), labels.view()),
        &cardinality,
        3,
        ChildSmoothing::HebTwoLevel,
        |_, model, layout| {
            let score = |rows: std::ops::Range<usize>, threads: usize| {
                let part = codes.slice(ndarray::s![.., rows]);
                with_threads(threads, || {
                    joint_log_likelihood(part, model, layout).unwrap()
                })
                .unwrap()
            };
            let whole = score(0..9000, 2);
            assert_eq!(bits(&whole), bits(&score(0..9000, 1)));
            assert_eq!(bits(&whole), bits(&score(0..9000, 3)));
            // other chunk boundaries, and rows scored alone
            for (first, last) in [(0, 4095), (4095, 4097), (4097, 9000), (1234, 1235)] {
                let part = score(first..last, 2);
                let expected = whole.slice(ndarray::s![first..last, ..]).to_owned();
                assert_eq!(bits(&part), bits(&expected), "rows {first}..{last}");
            }
        },
    );
}

#[test]
fn checked_cells_score_the_same_and_unchecked_bad_cells_are_an_error() {
    // 30-value features: sparse pairs whose cells the scorer searches
    let cardinality = [3, 30, 12, 30];
    let (codes, labels) = random_table(600, &cardinality, 12);
    let layout = FeatureLayout::from_cardinalities(&cardinality);
    let (capped, parents) = (vec![false; 16], vec![true; 4]);
    let (pairs, fit) = fitted_random_table(
        (codes.view(), labels.view()),
        &layout,
        (&capped, &parents),
        (ChildSmoothing::HebTwoLevel, 10.0),
    );
    let structure = Structure {
        capped: &capped,
        parents: &parents,
    };
    // one child value out of range, and one cell fewer than the row pointers say
    let mut bad_indices = pairs.indices.clone();
    let last = bad_indices.len() - 1;
    bad_indices[last] = 1_000;
    let model = fit.model(pairs.view(), structure, 1.0);
    assert!(model.pair_cells_checked, "a fit's own tables are checked");
    let unchecked = AodeModel {
        pair_cells_checked: false,
        ..model
    };
    let checked = joint_log_likelihood(codes.view(), &model, &layout).unwrap();
    let rechecked = joint_log_likelihood(codes.view(), &unchecked, &layout).unwrap();
    assert_eq!(bits(&checked), bits(&rechecked));

    // bad cells are found only when the cells are checked
    let bad = PairTablesView {
        indices: &bad_indices,
        ..pairs.view()
    };
    let refused = joint_log_likelihood(
        codes.view(),
        &AodeModel {
            pair_tables: bad,
            ..unchecked
        },
        &layout,
    );
    assert!(
        matches!(&refused, Err(HebError::InvalidParameter(m)) if m.contains("out of range")),
        "{refused:?}"
    );
    // the shape is checked either way
    let short = PairTablesView {
        indices: &bad_indices[..last],
        ..pairs.view()
    };
    for pair_cells_checked in [false, true] {
        let model = AodeModel {
            pair_tables: short,
            pair_cells_checked,
            ..model
        };
        assert!(joint_log_likelihood(codes.view(), &model, &layout).is_err());
    }
}

#[test]
fn parent_terms_by_hand_and_for_any_thread_count() {
    // one_pair_by_hand's model: row (0, 1) and a row whose x1 is missing
    let (codes, labels) = one_pair_table();
    let table = (codes.view(), labels.view());
    with_uncapped_model(
        table,
        &[2, 2],
        2,
        ChildSmoothing::Laplace,
        |_, model, layout| {
            let rows = array![[0, 1], [1, -1]];
            let out = parent_terms(rows.view(), model, layout, CellRequest::All, None).unwrap();
            let prior = 0.5f64.ln();
            // parent 0 = 0: P(y, x0) = (3, 1) / 8, P(x1 = 1 | y, x0 = 0) = (1/2, 1/2)
            // parent 1 = 1: P(y, x1) = (2, 3) / 8, P(x0 = 0 | y, x1 = 1) = (2/3, 1/4)
            let parent: [[f64; 2]; 2] = [[3.0 / 8.0, 1.0 / 8.0], [2.0 / 8.0, 3.0 / 8.0]];
            let child: [[f64; 2]; 2] = [[0.5, 0.5], [2.0 / 3.0, 0.25]];
            for rank in 0..2 {
                for c in 0..2 {
                    let term = (parent[rank][c] * child[rank][c]).ln();
                    assert!((out.terms[[0, rank, c]] - term).abs() < 1e-14, "{out:?}");
                    let own = parent[rank][c].ln() - prior;
                    assert!((out.cells[[0, rank, rank, c]] - own).abs() < 1e-14);
                    let other = out.cells[[0, rank, 1 - rank, c]];
                    assert!((other - child[rank][c].ln()).abs() < 1e-14);
                }
            }
            // row 1: parent 0 qualifies (no child), parent 1 is missing: the Naive Bayes score
            assert_eq!(out.qualifies, array![[true, true], [true, false]]);
            let joint = joint_log_likelihood(rows.view(), model, layout).unwrap();
            let naive_bayes = crate::scoring::joint_log_likelihood(
                rows.view(),
                model.marginal_log_prob,
                model.class_log_prior,
                None,
                layout,
            )
            .unwrap();
            for c in 0..2 {
                assert_eq!(out.terms[[1, 1, c]], naive_bayes[[1, c]]);
                assert_eq!(out.terms[[1, 0, c]], joint[[1, c]]); // the only qualifying parent
                assert_eq!(out.cells[[1, 0, 1, c]], 0.0);
                assert_eq!(out.cells[[1, 1, 0, c]], 0.0);
            }
        },
    );
    // a wider table: the same bits for any thread count; AODE is the terms' average
    let cardinality = [3, 7, 12, 2, 30, 3];
    let (codes, labels) = random_table(3000, &cardinality, 5);
    let table = (codes.view(), labels.view());
    with_uncapped_model(
        table,
        &cardinality,
        3,
        ChildSmoothing::HebTwoLevel,
        |_, model, layout| {
            let with = |threads: usize| {
                with_threads(threads, || {
                    parent_terms(codes.view(), model, layout, CellRequest::All, None).unwrap()
                })
                .unwrap()
            };
            let (one, two) = (with(1), with(3));
            assert_eq!(bits(&one.terms), bits(&two.terms));
            assert_eq!(bits(&one.cells), bits(&two.cells));
            // numbered cells have the whole array's values on every row that uses them
            let (n_parents, n_features) = (one.cells.dim().1, one.cells.dim().2);
            let numbering = numbered_cells(codes.view(), &cardinality, n_parents);
            for threads in [1, 3] {
                let numbered = with_threads(threads, || {
                    parent_terms(codes.view(), model, layout, numbering.request(), None).unwrap()
                })
                .unwrap();
                assert_eq!(bits(&numbered.terms), bits(&one.terms));
                assert_eq!(numbered.qualifies, one.qualifies);
                let mut uses = 0;
                for ((k, r), &cell) in numbering.cells.indexed_iter() {
                    let (rank, j) = (k / n_features, k % n_features);
                    if cell >= 0 && one.qualifies[[r, rank]] {
                        let expected = one.cells.slice(ndarray::s![r, rank, j, ..]);
                        assert_eq!(numbered.numbered_cells.row(cell as usize), expected);
                        uses += 1;
                    }
                }
                assert!(uses > codes.ncols() * n_parents, "{uses}");
                // without the terms: the same cells and qualification, no row scored
                let unscored = with_threads(threads, || {
                    let request = numbering.request_with(false);
                    parent_terms(codes.view(), model, layout, request, None).unwrap()
                })
                .unwrap();
                assert_eq!(unscored.qualifies, one.qualifies);
                assert_eq!(
                    bits(&unscored.numbered_cells),
                    bits(&numbered.numbered_cells)
                );
                assert!(unscored.terms.iter().all(|&t| t == 0.0));
            }
            // without cells the parents are scored in parallel over larger chunks: the
            // same terms
            for threads in [1, 3] {
                let terms = with_threads(threads, || {
                    parent_terms(codes.view(), model, layout, CellRequest::None, None).unwrap()
                })
                .unwrap();
                assert_eq!(bits(&terms.terms), bits(&one.terms));
                assert_eq!(terms.qualifies, one.qualifies);
            }
            let joint = joint_log_likelihood(codes.view(), model, layout).unwrap();
            assert!(!one.qualifies.iter().all(|&q| q), "some values are missing");
            for r in 0..codes.ncols() {
                let qualifying: Vec<usize> = (0..6).filter(|&p| one.qualifies[[r, p]]).collect();
                for c in 0..3 {
                    let terms: Vec<f64> =
                        qualifying.iter().map(|&p| one.terms[[r, p, c]]).collect();
                    if terms.is_empty() {
                        assert_eq!(one.terms[[r, 0, c]], joint[[r, c]]); // Naive Bayes
                        continue;
                    }
                    let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let sum: f64 = terms.iter().map(|t| (t - max).exp()).sum();
                    let average = max + sum.ln() - (terms.len() as f64).ln();
                    assert!((average - joint[[r, c]]).abs() < 1e-12);
                }
            }
        },
    );
}

#[test]
fn low_counts_fall_back_to_the_child_cardinality() {
    let cardinality = [4, 6];
    let (codes, labels) = random_table(200, &cardinality, 3);
    let layout = FeatureLayout::from_cardinalities(&cardinality);
    let (capped, parents) = ([false, false, true, false], [true; 2]);
    let (_, fit) = fitted_random_table(
        (codes.view(), labels.view()),
        &layout,
        (&capped, &parents),
        (ChildSmoothing::HebPooled, 1e9),
    );
    for c in 0..3 {
        assert_eq!(fit.concentration[[c, 0, 1]], 6.0);
        assert_eq!(fit.n_iter[[c, 0, 1]], 0);
        assert!(fit.concentration[[c, 1, 0]].is_nan(), "capped orientation");
    }
    // only the modelled orientation keeps a table: dense, K_0 K_1 C = 72 numbers
    assert_eq!(fit.child_tables.dense.len(), 4 * 6 * 3);
    assert_eq!(fit.child_tables.sparse.nrows(), 0);
}

#[test]
fn a_feature_that_is_not_a_super_parent_stores_nothing_and_never_averages() {
    // parents = {0}: pair (1, 2) has no table; scoring averages over parent 0 alone
    let cardinality = [3, 4, 5];
    let (codes, labels) = random_table(500, &cardinality, 5);
    let layout = FeatureLayout::from_cardinalities(&cardinality);
    let (capped, parents) = ([false; 9], [true, false, false]);
    let structure = Structure {
        capped: &capped,
        parents: &parents,
    };
    let (pairs, counts) = statistics(codes.view(), labels.view(), &layout, 3, &structure);
    let p = params(ChildSmoothing::Laplace, 10.0, 3);
    let fit = fit_all(&pairs, &counts, &layout, &structure, &p);
    // pair (1, 2) is not stored at all, not even its row pointers
    assert_eq!(pairs.pairs, vec![0, 1, 0, 2]);
    assert_eq!(pairs.indptr.len(), 3 + 3 + 1);
    // dense tables of (0, 1) and (0, 2) with parent 0 only
    assert_eq!(fit.child_tables.dense.len(), (3 * 4 + 3 * 5) * 3);
    assert_eq!(fit.child_tables.sparse.nrows(), 0);
    // diagnostics per super-parent: one row (parent 0), NaN on its own column
    assert_eq!(fit.concentration.dim(), (3, 1, 3));
    assert!(fit.concentration[[0, 0, 0]].is_nan());
    assert_eq!(fit.concentration[[0, 0, 1]], 4.0);
    // tables counted for another structure are refused
    let all_parents = [true; 3];
    let other = Structure {
        capped: &capped,
        parents: &all_parents,
    };
    let single = AodeCounts {
        class_count: &counts.class_totals,
        counts: counts.table.view(),
    };
    assert!(fit_with_structure(single, &pairs, &layout, &other).is_err());
    // by hand: ln P(y, x_0) + sum_j ln P(x_j | y, x_0) with Laplace children
    let joint = joint_log_likelihood(
        codes.view(),
        &fit.model(pairs.view(), structure, 1.0),
        &layout,
    )
    .unwrap();
    let n = codes.ncols();
    for s in (0..n).step_by(37) {
        let u = codes[[0, s]];
        if u < 0 {
            continue;
        }
        for c in 0..3 {
            let in_class = |f: usize, v: i32| {
                (0..n)
                    .filter(|&r| labels[r] == c as i64 && codes[[0, r]] == u && codes[[f, r]] == v)
                    .count() as f64
            };
            let total = (0..n).filter(|&r| codes[[0, r]] >= 0).count() as f64;
            let parent_rows = (0..n)
                .filter(|&r| labels[r] == c as i64 && codes[[0, r]] == u)
                .count() as f64;
            let mut expected = ((parent_rows + 1.0) / (total + 9.0)).ln();
            for f in 1..3 {
                let v = codes[[f, s]];
                if v < 0 {
                    continue;
                }
                let k = cardinality[f] as f64;
                let both: f64 = (0..cardinality[f] as i32).map(|w| in_class(f, w)).sum();
                expected += ((in_class(f, v) + 1.0) / (both + k)).ln();
            }
            assert!(
                (joint[[s, c]] - expected).abs() < 1e-12,
                "row {s} class {c}"
            );
        }
    }
}

fn fit_with_structure(
    single: AodeCounts,
    pairs: &PairTables,
    layout: &FeatureLayout,
    structure: &Structure,
) -> Result<AodeFit> {
    let p = params(ChildSmoothing::Laplace, 10.0, 3);
    fit(single, pairs.view(), layout, structure, &p)
}

#[test]
fn wanted_pairs_are_those_with_a_modelled_orientation() {
    // 6 features, super-parents {1, 4}, orientation (4, 5) capped and (1, 0) capped
    let n = 6;
    let mut capped = vec![false; n * n];
    capped[4 * n + 5] = true;
    capped[n] = true;
    let parents = [false, true, false, false, true, false];
    let structure = Structure {
        capped: &capped,
        parents: &parents,
    };
    let mut by_scan = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            if structure.wanted(a, b) {
                by_scan.push((a, b));
            }
        }
    }
    assert_eq!(structure.wanted_pairs().unwrap(), by_scan);
    assert!(!by_scan.contains(&(0, 1)) && !by_scan.contains(&(4, 5)));
    assert_eq!(by_scan.len(), 5 + 4 - 2);
    assert_eq!(
        structure.parent_ranks(),
        vec![None, Some(0), None, None, Some(1), None]
    );
}

#[test]
fn planned_bytes_bound_what_the_fit_holds() {
    let cardinality = [3, 7, 12, 2, 30];
    let (codes, labels) = random_table(2000, &cardinality, 11);
    let layout = FeatureLayout::from_cardinalities(&cardinality);
    let capped = vec![false; 25];
    let parents = vec![true; 5];
    let structure = Structure {
        capped: &capped,
        parents: &parents,
    };
    let (pairs, counts) = statistics(codes.view(), labels.view(), &layout, 3, &structure);
    let fit = fit_all(
        &pairs,
        &counts,
        &layout,
        &structure,
        &params(ChildSmoothing::HebTwoLevel, 10.0, 3),
    );
    let planned = planned_bytes(&layout, &structure, 2000, 3, 0, true);
    let held = |a: usize| a as u128;
    let tables = held(
        pairs.indices.len() * 4
            + pairs.counts.to_f64().len() * pairs.counts.count_bytes()
            + pairs.indptr.len() * 8
            + pairs.pairs.len() * 4,
    );
    let children = held((fit.child_tables.dense.len() + fit.child_tables.sparse.len()) * 8);
    let diagnostics = held(
        fit.concentration.len() * 8
            + fit.n_iter.len() * 8
            + fit.converged.len()
            + fit.pooled_concentration.len() * 8,
    );
    assert!(planned.pair_tables >= tables, "{planned:?}");
    assert!(
        planned.child_tables >= children,
        "{planned:?} vs {children}"
    );
    assert!(planned.diagnostics >= diagnostics);
    assert!(planned.total() >= tables + children + diagnostics);
    let _: Array3<f64> = fit.concentration;
}

/// The training rows `(labels, weights)` of `fit` (single counts `counts`) to be left out
/// of its model.
fn left_out_rows<'a>(
    fit: &'a AodeFit,
    counts: &'a CategoricalCounts,
    (labels, weights): (ArrayView1<'a, i64>, ArrayView1<'a, f64>),
    parent_smoothing: ParentSmoothing,
) -> LeftOut<'a> {
    LeftOut {
        labels,
        weights,
        counts: counts.table.view(),
        class_count: &counts.class_totals,
        concentration: fit.concentration.view(),
        pooled_concentration: fit.pooled_concentration.view(),
        marginal_concentration: fit.marginal_concentration.view(),
        parent_concentration: &fit.parent_concentration,
        parent_smoothing,
        replace_class_prior: false,
    }
}

/// The left-out terms of `codes` (every feature a super-parent, of `cardinality`)
/// corrected from their numbered cells, on 1 and 2 threads, are `expected`'s to the bit,
/// with its qualification.
fn assert_numbered_left_out_terms(
    (codes, cardinality): (ArrayView2<i32>, &[usize]),
    model: &AodeModel,
    layout: &FeatureLayout,
    left_out: LeftOut,
    expected: &ParentTerms,
) {
    let numbering = numbered_cells(codes, cardinality, cardinality.len());
    for threads in [1, 2] {
        let numbered = with_threads(threads, || {
            parent_terms(codes, model, layout, numbering.request(), Some(left_out)).unwrap()
        })
        .unwrap();
        assert_eq!(bits(&numbered.terms), bits(&expected.terms));
        assert_eq!(numbered.qualifies, expected.qualifies);
    }
}

#[test]
fn left_out_terms_change_only_counted_rows_and_not_with_the_threads() {
    // rows of weight 0 were never counted: leaving them out gives their in-sample terms;
    // the others lose their own counts. The same bits for any thread count, with or
    // without the cells kept.
    let cardinality = [3, 7, 12, 2, 30, 3];
    let (codes, labels) = random_table(2000, &cardinality, 9);
    let table = (codes.view(), labels.view());
    with_uncapped_model(
        table,
        &cardinality,
        3,
        ChildSmoothing::HebTwoLevel,
        |fit, model, layout| {
            let ones = Array1::ones(codes.ncols());
            let counts =
                count_categories(codes.view(), labels.view(), ones.view(), layout, 3).unwrap();
            let weights: Array1<f64> = (0..codes.ncols())
                .map(|r| if r % 3 == 0 { 0.0 } else { 1.0 })
                .collect();
            let rows = (labels.view(), weights.view());
            let left_out = left_out_rows(fit, &counts, rows, ParentSmoothing::Laplace);
            let in_sample =
                parent_terms(codes.view(), model, layout, CellRequest::None, None).unwrap();
            let with = |threads: usize, cells: bool| {
                let request = if cells {
                    CellRequest::All
                } else {
                    CellRequest::None
                };
                with_threads(threads, || {
                    parent_terms(codes.view(), model, layout, request, Some(left_out)).unwrap()
                })
                .unwrap()
            };
            let one = with(1, false);
            for (threads, cells) in [(3, false), (1, true), (2, true)] {
                assert_eq!(bits(&with(threads, cells).terms), bits(&one.terms));
            }
            // corrected from the numbered cells' values instead of the scored rows' cells
            let numbered = (codes.view(), &cardinality[..]);
            assert_numbered_left_out_terms(numbered, model, layout, left_out, &one);
            let mut largest_change: f64 = 0.0;
            for r in 0..codes.ncols() {
                for (a, b) in one
                    .terms
                    .slice(ndarray::s![r, .., ..])
                    .iter()
                    .zip(in_sample.terms.slice(ndarray::s![r, .., ..]))
                {
                    if weights[r] == 0.0 {
                        assert!((a - b).abs() < 1e-12, "row {r}: {a} against {b}");
                    } else {
                        largest_change = largest_change.max((a - b).abs());
                    }
                }
            }
            assert!(largest_change > 0.1, "{largest_change}");
            // a label out of range is refused
            let bad = labels.mapv(|l| l + 3);
            let refused = parent_terms(
                codes.view(),
                model,
                layout,
                CellRequest::None,
                Some(LeftOut {
                    labels: bad.view(),
                    ..left_out
                }),
            );
            assert!(refused.is_err());
        },
    );
}

#[test]
fn left_out_terms_from_per_cell_parts_are_those_of_the_scored_rows() {
    // equal weights and one prior mean: the numbered cells' parts, computed once per cell
    // and class, give the bits of correcting each row's scored cells; with a 30-value
    // feature among six, and a row without a value of it
    let cardinality = [3, 7, 12, 2, 30, 3];
    let (mut codes, labels) = random_table(1500, &cardinality, 11);
    codes[[4, 7]] = -1;
    let table = (codes.view(), labels.view());
    for smoothing in [ChildSmoothing::Laplace, ChildSmoothing::HebPooled] {
        with_uncapped_model(table, &cardinality, 3, smoothing, |fit, model, layout| {
            let weights = Array1::ones(codes.ncols());
            let counts =
                count_categories(codes.view(), labels.view(), weights.view(), layout, 3).unwrap();
            let rows = (labels.view(), weights.view());
            let left_out = left_out_rows(fit, &counts, rows, ParentSmoothing::Heb);
            assert!(fit.pooled_concentration.iter().all(|a| a.is_nan()));
            let scored = parent_terms(
                codes.view(),
                model,
                layout,
                CellRequest::All,
                Some(left_out),
            )
            .unwrap();
            let numbered = (codes.view(), &cardinality[..]);
            assert_numbered_left_out_terms(numbered, model, layout, left_out, &scored);
        });
    }
}
