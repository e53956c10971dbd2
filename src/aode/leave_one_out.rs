//! The super-parent terms of AODE's own training rows, each row left out of the tables
//! that score it: what `AODE(weighting_rows="leave-one-out")` fits its discriminative
//! weights on (docs/discriminative.md, "Leave-one-out super-parent terms").
//!
//! A training row's counts are in every table that scores it, so on its own terms its class
//! looks more probable than for a new row, and weights fitted on them learn to trust
//! memorised pairs. A row of class `y` and sample weight `w` is scored here as the fitted
//! model would score it had `w` not been counted:
//!
//! * the counts of class `y` it added to lose `w`: its pair cell `N_{y,u,v}` and the parent
//!   value's `N_{y,u}`, the two-level mean's class-pooled `N_{u,v}` and `N_u`, the parent
//!   term's single counts and those of the Naive Bayes fallback;
//! * the concentrations, the child means `mu_{j,v}`, the parent term's class mean and the
//!   class prior stay as fitted (the plug-in of SPEC eq. 3, as Naive Bayes' leave-one-out
//!   rows);
//! * a value that no other training row has is unknown, as a new row's unseen value: it
//!   adds no child term, and a super-parent with it does not qualify; nor does one whose
//!   value the other rows weigh below `min_parent_count`. Such a super-parent's term is the
//!   Naive Bayes fallback, left out alike.
//!
//! A child cell is corrected from the scorer's own log-probability `ln(S_c / D_c)`, with
//! `S_c = N_{c,u,v} + m_c mu_{u,v}` and `D_c = N_{c,u} + m_c` (rows with the child
//! present): it becomes `ln((S_c + m_c (mu' - mu) - [c = y] w) / (D_c - [c = y] w))`,
//! `mu' - mu` the change of the two-level mean (none for a one-level mean, where only
//! class `y`'s cell changes).

use ndarray::{Array2, ArrayView1, ArrayView2, ArrayView3};
use rayon::prelude::*;

use super::score::AodeModel;
use super::ParentSmoothing;
use crate::counts::check_rows;
use crate::error::{check_len, filled, with_capacity, zeroed, HebError, Result};
use crate::layout::FeatureLayout;
use crate::parallel::split_by_bounds;
use crate::parent_prior::{class_mean, per_feature_class_counts};

/// What scoring the training rows left out needs beyond the model: the rows' classes and
/// weights, the single counts and the fit's concentrations.
#[derive(Debug, Clone, Copy)]
pub struct LeftOut<'a> {
    /// Class index of every scored row.
    pub labels: ArrayView1<'a, i64>,
    /// Sample weight of every scored row (its share of the counts).
    pub weights: ArrayView1<'a, f64>,
    /// The single counts `N_{c,v}`, shape (C, sum K_f).
    pub counts: ArrayView2<'a, f64>,
    /// The training weight of every class.
    pub class_count: &'a [f64],
    /// `m_{c,i,j}`, shape (C, P, F) ([`super::AodeFit::concentration`]).
    pub concentration: ArrayView3<'a, f64>,
    /// `a_{i,j}` of the two-level mean, shape (P, F); NaN for a one-level mean.
    pub pooled_concentration: ArrayView2<'a, f64>,
    /// The Naive Bayes child's `m_{c,j}`, shape (C, F).
    pub marginal_concentration: ArrayView2<'a, f64>,
    /// The parent term's `m_i`, length F.
    pub parent_concentration: &'a [f64],
    pub parent_smoothing: ParentSmoothing,
    /// Whether the class prior replaced eq. 8's class part in the parent term.
    pub replace_class_prior: bool,
}

/// The per-call tables of [`LeftOut`]: class counts per feature, the parent term's class
/// mean, and the children's parent-value counts where a child is sometimes missing.
pub(super) struct LeftOutTables<'a> {
    left_out: LeftOut<'a>,
    n_classes: usize,
    n_features: usize,
    /// `N_c^(f)`: class counts of the rows with feature f present, (F, C).
    present: Array2<f64>,
    /// The parent term's class mean `(N_c^(i) + 1) / (S_i + C)`, (F, C).
    class_mean: Array2<f64>,
    /// Each feature's place among the features missing on some training rows
    /// (`usize::MAX`: never missing).
    missing_rank: Vec<usize>,
    /// How many features are missing on some training rows.
    n_missing: usize,
    /// `N_{c,u}` of the rows with the child present, (K_i, C), of each (parent rank,
    /// sometimes-missing child) orientation read from a pair table, at `rank * M +
    /// missing_rank[j]` (None: capped, or the parent itself).
    pair_totals: Vec<Option<Vec<f64>>>,
    /// Where each stored pair's CSR rows start (for reading a cell's exact counts).
    row_offsets: Vec<usize>,
}

/// A numerator `S - w` rebuilt from a log-probability (`S = exp(ln P) D`) keeps fewer than
/// about ten digits when `w` is most of `S` (a row whose weight is nearly all its cell's
/// count): then the cell's exact count is read instead. With weights of 1e4 or more per
/// row the rebuilt one was off by up to nats.
const CANCELLATION: f64 = 1e-3;

/// Whether `scaled - w` cancels beyond [`CANCELLATION`].
#[inline]
fn cancels(scaled: f64, w: f64) -> bool {
    scaled - w < CANCELLATION * scaled
}

/// The log of a left-out numerator, kept above half its prior part against rounding (in
/// exact arithmetic it is at least `m mu`: the row's own weight is in it).
#[inline]
fn log_left(numerator: f64, floor: f64) -> f64 {
    numerator.max(floor).ln()
}

/// The log of a left-out denominator `N - w + m`, at least `m` in exact arithmetic.
#[inline]
fn log_total(total: f64, concentration: f64) -> f64 {
    total.max(concentration).ln()
}

impl<'a> LeftOut<'a> {
    /// Checks the inputs against the model and layout and builds the per-call tables.
    ///
    /// # Errors
    /// Shape mismatches, labels out of range, negative or non-finite weights, and
    /// [`HebError::Allocation`].
    pub(super) fn prepare(
        self,
        model: &AodeModel,
        layout: &FeatureLayout,
        codes: ArrayView2<i32>,
        super_parents: &[usize],
    ) -> Result<LeftOutTables<'a>> {
        let n_classes = model.class_log_prior.len();
        let n_features = layout.n_features();
        let n_parents = super_parents.len();
        check_rows(codes, self.labels, self.weights, layout)?;
        check_len("left-out class counts", n_classes, self.class_count.len())?;
        check_len(
            "parent concentrations",
            n_features,
            self.parent_concentration.len(),
        )?;
        let shapes = [
            (
                "single counts",
                self.counts.dim(),
                (n_classes, layout.n_columns()),
            ),
            (
                "marginal concentrations",
                self.marginal_concentration.dim(),
                (n_classes, n_features),
            ),
            (
                "pooled concentrations",
                self.pooled_concentration.dim(),
                (n_parents, n_features),
            ),
        ];
        for (what, got, expected) in shapes {
            if got != expected {
                return Err(HebError::InvalidParameter(format!(
                    "{what} have shape {got:?}, expected {expected:?}"
                )));
            }
        }
        if self.concentration.dim() != (n_classes, n_parents, n_features) {
            return Err(HebError::InvalidParameter(format!(
                "concentrations have shape {:?}, expected {:?}",
                self.concentration.dim(),
                (n_classes, n_parents, n_features)
            )));
        }
        if let Some(&class) = self
            .labels
            .iter()
            .find(|&&l| l < 0 || l as usize >= n_classes)
        {
            return Err(HebError::ClassOutOfRange { class, n_classes });
        }
        let present = per_feature_class_counts(self.counts, layout);
        let class_mean = class_mean(self.counts, layout);
        // a feature is sometimes missing where some class has fewer rows with it present;
        // only then do its parent-value counts differ from the parent's single counts
        let missing: Vec<usize> = (0..n_features)
            .filter(|&f| {
                (0..n_classes).any(|c| present[[f, c]] < self.class_count[c] * (1.0 - 1e-12))
            })
            .collect();
        let mut missing_rank = filled(n_features, usize::MAX, "left-out missing features")?;
        for (rank, &f) in missing.iter().enumerate() {
            missing_rank[f] = rank;
        }
        let tables = &model.pair_tables;
        let row_offsets = tables.row_offsets(layout)?;
        let counts = tables
            .counts
            .as_slice()
            .ok_or_else(|| HebError::InvalidParameter("pair counts must be contiguous".into()))?;
        let mut orientations = with_capacity(n_parents * missing.len(), "left-out orientations")?;
        for &i in super_parents {
            orientations.extend(missing.iter().map(|&j| (i, j)));
        }
        let pair_totals = orientations
            .par_iter()
            .map(|&(i, j)| {
                if !model.structure.modelled(i, j) || crate::interrupt::cancelled() {
                    return Ok(None);
                }
                let (a, b) = (i.min(j), i.max(j));
                let p = tables.position(a, b).expect("modelled pairs are stored");
                let k_i = layout.cardinality(i);
                let mut totals = zeroed(k_i * n_classes, "left-out pair totals")?;
                let mut cell = vec![0.0; n_classes];
                for u_a in 0..layout.cardinality(a) {
                    let row = row_offsets[p] + u_a;
                    for k in tables.indptr[row] as usize..tables.indptr[row + 1] as usize {
                        counts.read(k * n_classes, &mut cell);
                        // the parent's value: the CSR row (a) or the cell's column (b)
                        let u = if i == a {
                            u_a
                        } else {
                            tables.indices[k] as usize
                        };
                        for (t, &n) in totals[u * n_classes..(u + 1) * n_classes]
                            .iter_mut()
                            .zip(&cell)
                        {
                            *t += n;
                        }
                    }
                }
                Ok(Some(totals))
            })
            .collect::<Result<Vec<_>>>()?;
        crate::interrupt::check()?;
        Ok(LeftOutTables {
            left_out: self,
            n_classes,
            n_features,
            present,
            class_mean,
            missing_rank,
            n_missing: missing.len(),
            pair_totals,
            row_offsets,
        })
    }
}

impl LeftOutTables<'_> {
    /// Whether category `column` is known without a row of weight `w`: other rows have it
    /// (and it scores at all).
    #[inline]
    fn known(&self, model: &AodeModel, column: usize, w: f64) -> bool {
        model.parent_count[column] - w > 0.0 && model.log_child_mean[column] > f64::NEG_INFINITY
    }

    /// `ln P(y = c, x_i = u)` of every class without a row of class `y` and weight `w`.
    #[allow(clippy::too_many_arguments)]
    fn parent_term(
        &self,
        model: &AodeModel,
        layout: &FeatureLayout,
        i: usize,
        u: usize,
        y: usize,
        w: f64,
        out: &mut [f64],
    ) {
        let lo = &self.left_out;
        let nc = self.n_classes;
        let c_f = nc as f64;
        let column = layout.columns(i).start + u;
        let k = layout.cardinality(i) as f64;
        let per_class = self.present.row(i);
        // counts without the row, never below zero (the row's weight is in them; with
        // weights of very different sizes their difference can round below)
        let present = (per_class.iter().sum::<f64>() - w).max(0.0); // S_i
        let fitted_total: f64 = lo.counts.column(column).sum();
        let value_total = (fitted_total - w).max(0.0); // N_u
        let m = lo.parent_concentration[i];
        for (c, slot) in out.iter_mut().enumerate() {
            let own = if c == y { w } else { 0.0 };
            let count = (lo.counts[[c, column]] - own).max(0.0);
            let class_count = (per_class[c] - own).max(0.0);
            let mean = self.class_mean[[i, c]];
            let prior = model.class_log_prior[c];
            *slot = match (lo.parent_smoothing, lo.replace_class_prior) {
                // eq. 8: (N_{c,u} + 1) / (S_i + C K_i)
                (ParentSmoothing::Laplace, false) => ((count + 1.0) / (present + c_f * k)).ln(),
                // pi_c (N_{c,u} + 1) / (N_c^(i) + K_i)
                (ParentSmoothing::Laplace, true) => {
                    prior + ((count + 1.0) / (class_count + k)).ln()
                }
                // P(u) P(c | u), P(c | u) = (N_{c,u} + m_i mean_c) / (N_u + m_i)
                (ParentSmoothing::Heb, false) => {
                    ((value_total + c_f) / (present + c_f * k)).ln() + (count + m * mean).ln()
                        - (value_total + m).ln()
                }
                // pi_c P(u | c): the joint P(u) P(c | u) normalised over the values of i.
                // Only this value's joint changes (the common 1 / (S_i + C K_i) cancels), by
                // `ratio`; its fitted share of the normaliser is read from the fitted table
                (ParentSmoothing::Heb, true) => {
                    let joint = (value_total + c_f) * (count + m * mean) / (value_total + m);
                    let fitted = (fitted_total + c_f) * (lo.counts[[c, column]] + m * mean)
                        / (fitted_total + m);
                    let share = (model.parent_log_prob[[column, c]] - prior).exp();
                    let left = share * (joint / fitted);
                    prior + (left / ((1.0 - share).max(0.0) + left)).ln()
                }
            };
        }
    }

    /// The Naive Bayes fallback of row `r` of `codes` (class `y`, weight `w`) left out.
    #[allow(clippy::too_many_arguments)]
    fn naive_bayes(
        &self,
        model: &AodeModel,
        layout: &FeatureLayout,
        codes: ArrayView2<i32>,
        r: usize,
        y: usize,
        w: f64,
        out: &mut [f64],
    ) {
        let lo = &self.left_out;
        out.copy_from_slice(model.class_log_prior);
        for j in 0..self.n_features {
            let v = codes[[j, r]];
            if v < 0 {
                continue;
            }
            let column = layout.columns(j).start + v as usize;
            if !self.known(model, column, w) {
                continue;
            }
            let log_probability = model.marginal_log_prob.row(column);
            for (c, slot) in out.iter_mut().enumerate() {
                if c == y {
                    let m = lo.marginal_concentration[[c, j]];
                    let total = self.present[[j, c]] + m;
                    let prior = m * model.child_mean[column];
                    let scaled = log_probability[c].exp() * total;
                    let left = if cancels(scaled, w) {
                        (lo.counts[[c, column]] - w) + prior
                    } else {
                        scaled - w
                    };
                    *slot += log_left(left, 0.5 * prior) - log_total(total - w, m);
                } else {
                    *slot += log_probability[c];
                }
            }
        }
    }

    /// The left-out term of super-parent `rank` (feature `i`) on row `r` of `codes`, its
    /// children's parts from `children` ([`RowCells`]); false when the parent does not
    /// qualify without the row (`term` is then untouched).
    #[allow(clippy::too_many_arguments)]
    fn parent_row(
        &self,
        model: &AodeModel,
        layout: &FeatureLayout,
        codes: ArrayView2<i32>,
        r: usize,
        (rank, i): (usize, usize),
        children: RowCells,
        term: &mut [f64],
        scratch: &mut [f64],
    ) -> bool {
        let lo = &self.left_out;
        let nc = self.n_classes;
        let n_features = self.n_features;
        let y = lo.labels[r] as usize;
        let w = lo.weights[r];
        let Some((u, parent_column)) = self.qualifying_parent(model, layout, i, codes[[i, r]], w)
        else {
            return false;
        };
        self.parent_term(model, layout, i, u, y, w, term);
        match children {
            RowCells::Scored(cells) => {
                let (part, scratch) = scratch.split_at_mut(nc);
                for j in (0..n_features).filter(|&j| j != i) {
                    let v = codes[[j, r]];
                    if v >= 0
                        && self.child_part(
                            model,
                            layout,
                            ((rank, i), (u, parent_column)),
                            (j, v as usize),
                            (&cells[j * nc..(j + 1) * nc], y, w),
                            part,
                            scratch,
                        )
                    {
                        term.iter_mut().zip(part.iter()).for_each(|(t, &p)| *t += p);
                    }
                }
            }
            RowCells::Corrected(CorrectedCells {
                numbers,
                values,
                corrections,
            }) => {
                for j in (0..n_features).filter(|&j| j != i) {
                    let cell = numbers[[rank * n_features + j, r]];
                    if cell < 0 {
                        continue;
                    }
                    let at = cell as usize * nc;
                    let own = corrections[at + y];
                    if own.is_nan() {
                        continue; // the child adds nothing without the row
                    }
                    // one prior mean: only the row's own class differs from the fitted cell
                    for (c, t) in term.iter_mut().enumerate() {
                        *t += if c == y { own } else { values[at + c] };
                    }
                }
            }
        }
        true
    }

    /// The value `u` and category column of super-parent `i` on a row whose code of it is
    /// `code` and whose weight is `w`, if the parent qualifies without the row: present,
    /// known and weighing at least `min_parent_count` in the other rows.
    fn qualifying_parent(
        &self,
        model: &AodeModel,
        layout: &FeatureLayout,
        i: usize,
        code: i32,
        w: f64,
    ) -> Option<(usize, usize)> {
        let u = usize::try_from(code).ok()?;
        let parent_column = layout.columns(i).start + u;
        (self.known(model, parent_column, w)
            && model.parent_count[parent_column] - w >= model.min_parent_count)
            .then_some((u, parent_column))
    }

    /// The exact counts `N_{c,u,v}` (into `out`, C) of the cell that child `j = v` reads
    /// under parent `i = u`: the pair table's cell (zero if unseen), or with `capped` the
    /// Naive Bayes child's `N_{c,v}`.
    fn cell_counts(
        &self,
        model: &AodeModel,
        layout: &FeatureLayout,
        (i, u): (usize, usize),
        (j, v): (usize, usize),
        capped: bool,
        out: &mut [f64],
    ) {
        if capped {
            let column = layout.columns(j).start + v;
            for (c, slot) in out.iter_mut().enumerate() {
                *slot = self.left_out.counts[[c, column]];
            }
            return;
        }
        out.fill(0.0);
        let tables = &model.pair_tables;
        let (a, b) = (i.min(j), i.max(j));
        let p = tables.position(a, b).expect("modelled pairs are stored");
        let (row, column) = if i == a { (u, v) } else { (v, u) };
        if let Some(k) = tables.find(self.row_offsets[p], row, column as i32) {
            tables.counts.add_cell(k, 1.0, out);
        }
    }

    /// What child `j` with value `v` adds to the left-out term of super-parent `rank`
    /// (feature `i`, value `u` in category column `parent_column`) of a row of class `y`
    /// and weight `w` whose in-sample cell is `cell` (C classes): into `part` (C; with one
    /// prior mean `cell` itself but at `y`); false when it adds nothing (a category that
    /// never scores, or unknown without the row). `scratch` holds `3 C`.
    #[allow(clippy::too_many_arguments)]
    fn child_part(
        &self,
        model: &AodeModel,
        layout: &FeatureLayout,
        ((rank, i), (u, parent_column)): ((usize, usize), (usize, usize)),
        (j, v): (usize, usize),
        (cell, y, w): (&[f64], usize, f64),
        part: &mut [f64],
        scratch: &mut [f64],
    ) -> bool {
        let lo = &self.left_out;
        let nc = self.n_classes;
        let column = layout.columns(j).start + v;
        if model.log_child_mean[column] == f64::NEG_INFINITY {
            return false; // never scores, in-sample either
        }
        if model.parent_count[column] - w <= 0.0 {
            return false; // unknown without the row: no term
        }
        let capped = !model.structure.modelled(i, j);
        // N_{c,u} of the rows with the child present, and m_c
        let count_and_concentration = |c: usize| {
            if capped {
                (self.present[[j, c]], lo.marginal_concentration[[c, j]])
            } else {
                let missing = self.missing_rank[j];
                let count = if missing == usize::MAX {
                    lo.counts[[c, parent_column]]
                } else {
                    match &self.pair_totals[rank * self.n_missing + missing] {
                        Some(totals) => totals[u * nc + c],
                        None => lo.counts[[c, parent_column]],
                    }
                };
                (count, lo.concentration[[c, rank, j]])
            }
        };
        let child_mean = model.child_mean[column];
        let pooled = if capped {
            f64::NAN
        } else {
            lo.pooled_concentration[[rank, j]]
        };
        if pooled.is_nan() {
            // one prior mean as fitted: only the row's own class changes, so only its
            // count and concentration are read
            part.copy_from_slice(cell);
            let (count, concentration) = count_and_concentration(y);
            let total = count + concentration;
            let prior = concentration * child_mean;
            let scaled = cell[y].exp() * total;
            let left = if cancels(scaled, w) {
                let exact = &mut scratch[..nc];
                self.cell_counts(model, layout, (i, u), (j, v), capped, exact);
                (exact[y] - w) + prior
            } else {
                scaled - w
            };
            part[y] = log_left(left, 0.5 * prior) - log_total(total - w, concentration);
        } else {
            let (scaled, rest) = scratch.split_at_mut(nc);
            let (total, m) = rest.split_at_mut(nc);
            for c in 0..nc {
                let (count, concentration) = count_and_concentration(c);
                m[c] = concentration;
                total[c] = count + concentration;
            }
            // the two-level mean mu_{u,v} = (N_{u,v} + a mu_v) / (N_u + a) loses w too,
            // where N_{u,v} + a mu_v = mu (N_u + a) and sum_c S_c = N_{u,v} + mu sum_c m_c
            let mut scaled_sum = 0.0;
            let (mut count_sum, mut m_sum) = (0.0, 0.0);
            for c in 0..nc {
                scaled[c] = cell[c].exp() * total[c];
                scaled_sum += scaled[c];
                count_sum += total[c] - m[c];
                m_sum += m[c];
            }
            let before = (scaled_sum + pooled * child_mean) / (count_sum + pooled + m_sum);
            // at least a mu_v / (N_u - w + a) in exact arithmetic (the row's own count
            // is in N_{u,v}), kept above half of it against rounding
            let left_total = count_sum - w + pooled;
            let floor = 0.5 * pooled * child_mean / left_total;
            let pooled_numerator = before * (count_sum + pooled);
            if cancels(scaled[y], w) || cancels(pooled_numerator, w) {
                // the cell's exact counts N_{c,u,v} in place of the rebuilt ones
                self.cell_counts(model, layout, (i, u), (j, v), false, scaled);
                let pair_count: f64 = scaled.iter().sum();
                let after = (((pair_count - w) + pooled * child_mean) / left_total).max(floor);
                for c in 0..nc {
                    let own = if c == y { w } else { 0.0 };
                    part[c] = log_left((scaled[c] - own) + m[c] * after, 0.5 * m[c] * after)
                        - log_total(total[c] - own, m[c]);
                }
                return true;
            }
            let after = ((pooled_numerator - w) / left_total).max(floor);
            for c in 0..nc {
                let own = if c == y { w } else { 0.0 };
                part[c] = log_left(
                    scaled[c] + m[c] * (after - before) - own,
                    0.5 * m[c] * after,
                ) - log_total(total[c] - own, m[c]);
            }
        }
        true
    }

    /// With every row of the same weight and one prior mean for every child, what each
    /// numbered cell ([`super::CellRequest::Numbered`]: column `k`'s cells
    /// `column_starts[k]..column_starts[k + 1]`, first used by `first_row`, in-sample
    /// `values` `(cells, C)`) adds to the left-out term of a row of each class: `(cells,
    /// C)`, at `[cell, y]` the part of class `y` ([`Self::child_part`]; the other classes
    /// add the cell's value), NaN where the child adds nothing. A row's parts then depend
    /// on its cell and class only, so each is computed once, not once per row. None
    /// otherwise (weights that differ, or a two-level mean, where every class changes).
    ///
    /// # Errors
    /// [`HebError::Allocation`] and [`HebError::Interrupted`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn child_corrections(
        &self,
        model: &AodeModel,
        layout: &FeatureLayout,
        codes: ArrayView2<i32>,
        super_parents: &[usize],
        (column_starts, first_row): (&[usize], ArrayView1<i64>),
        values: &[f64],
    ) -> Result<Option<Vec<f64>>> {
        let lo = &self.left_out;
        let (nc, n_features) = (self.n_classes, self.n_features);
        let Some(&w) = lo.weights.first() else {
            return Ok(None);
        };
        let one_weight = lo.weights.iter().all(|&weight| weight == w);
        let one_level = lo.pooled_concentration.iter().all(|a| a.is_nan());
        if !one_weight || !one_level {
            return Ok(None);
        }
        let mut corrections = filled(values.len(), f64::NAN, "left-out cell corrections")?;
        let columns = split_by_bounds(&mut corrections, column_starts, nc)?;
        columns.into_par_iter().for_each(|(k, own)| {
            let (rank, j) = (k / n_features, k % n_features);
            let i = super_parents[rank];
            if j == i || crate::interrupt::cancelled() {
                return; // the parent's own cells: its term is left out row by row
            }
            let (mut part, mut scratch) = (vec![0.0; nc], vec![0.0; 3 * nc]);
            let cells = column_starts[k]..column_starts[k + 1];
            for (out, cell) in own.chunks_exact_mut(nc).zip(cells) {
                let row = first_row[cell] as usize;
                let v = codes[[j, row]];
                let parent = self.qualifying_parent(model, layout, i, codes[[i, row]], w);
                let (Some(parent), Ok(v)) = (parent, usize::try_from(v)) else {
                    continue; // no row uses it without its parent's qualifying
                };
                let value = &values[cell * nc..(cell + 1) * nc];
                for (y, slot) in out.iter_mut().enumerate() {
                    let place = ((rank, i), parent);
                    let row_part = (value, y, w);
                    if self.child_part(
                        model,
                        layout,
                        place,
                        (j, v),
                        row_part,
                        &mut part,
                        &mut scratch,
                    ) {
                        *slot = part[y];
                    }
                }
            }
        });
        crate::interrupt::check()?;
        Ok(Some(corrections))
    }

    /// Replaces the in-sample terms of the `n` rows of `codes` from `first` (`terms`
    /// `(n, P, C)`, `qualifies` `(n, P)` in-sample) by their left-out terms, their
    /// children's parts from `cells` ([`ChunkCells`]); `super_parents` in feature order.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn replace_terms(
        &self,
        model: &AodeModel,
        layout: &FeatureLayout,
        codes: ArrayView2<i32>,
        (first, n): (usize, usize),
        super_parents: &[usize],
        qualifies: &[bool],
        cells: ChunkCells,
        terms: &mut [f64],
    ) {
        let nc = self.n_classes;
        let n_parents = super_parents.len();
        let block = self.n_features * nc;
        let mut fallback = vec![0.0; nc];
        let mut scratch = vec![0.0; 4 * nc];
        for r in 0..n {
            let row = first + r;
            let mut fallback_ready = false;
            for (rank, &i) in super_parents.iter().enumerate() {
                let at = (r * n_parents + rank) * nc;
                let term = &mut terms[at..at + nc];
                let children = match cells {
                    ChunkCells::Scored(cells) => {
                        RowCells::Scored(&cells[(r * n_parents + rank) * block..][..block])
                    }
                    ChunkCells::Numbered(cells) => RowCells::Corrected(cells),
                };
                let qualifies = qualifies[r * n_parents + rank]
                    && self.parent_row(
                        model,
                        layout,
                        codes,
                        row,
                        (rank, i),
                        children,
                        term,
                        &mut scratch,
                    );
                if !qualifies {
                    if !fallback_ready {
                        let y = self.left_out.labels[row] as usize;
                        let w = self.left_out.weights[row];
                        self.naive_bayes(model, layout, codes, row, y, w, &mut fallback);
                        fallback_ready = true;
                    }
                    term.copy_from_slice(&fallback);
                }
            }
        }
    }
}

/// Where [`LeftOutTables::replace_terms`] reads a chunk's in-sample cells.
#[derive(Clone, Copy)]
pub(super) enum ChunkCells<'a> {
    /// The chunk's `(row, parent rank, feature, class)` cells as the scorer writes them.
    Scored(&'a [f64]),
    /// The rows' numbered cells and their parts left out.
    Numbered(CorrectedCells<'a>),
}

/// Each row's numbered cell in each column, `numbers` (P F, S), the cells' `values`
/// `(cells, C)` and their parts left out ([`LeftOutTables::child_corrections`]).
#[derive(Clone, Copy)]
pub(super) struct CorrectedCells<'a> {
    pub(super) numbers: ArrayView2<'a, i64>,
    pub(super) values: &'a [f64],
    pub(super) corrections: &'a [f64],
}

/// One row's in-sample cells of one parent: its `(F, C)` block, or the numbered cells.
#[derive(Clone, Copy)]
enum RowCells<'a> {
    Scored(&'a [f64]),
    Corrected(CorrectedCells<'a>),
}
