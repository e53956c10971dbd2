//! The number of classes as a compile-time constant for the hot class loops: a loop over
//! a cell's `C` classes unrolls, and its bounds are checked once, where `C` is known
//! (measured: the weighted models' passes and Naive Bayes scoring, docs/discriminative.md).

/// Evaluates the block `$body` with the constant `$classes` set to `$n_classes` where the
/// passes are compiled for that number of classes (2 to 10: the class loops unroll), else
/// to 0 (a loop over any number).
macro_rules! by_class_count {
    ($n_classes:expr, $classes:ident, $body:block) => {
        by_class_count!(@arms $n_classes, $classes, $body, 2 3 4 5 6 7 8 9 10)
    };
    (@arms $n_classes:expr, $classes:ident, $body:block, $($compiled:literal)*) => {
        match $n_classes {
            $(
                $compiled => {
                    const $classes: usize = $compiled;
                    $body
                }
            )*
            _ => {
                const $classes: usize = 0;
                $body
            }
        }
    };
}

pub(crate) use by_class_count;

/// `target = source` over one cell's classes, a copy of `C` values where their number is
/// known at compile time (0: the slices' length), instead of a call to `memcpy`.
#[inline(always)]
pub(crate) fn copy_classes<const C: usize>(target: &mut [f64], source: &[f64]) {
    if C > 0 {
        let target: &mut [f64; C] = target.try_into().expect("a cell of C classes");
        let source: &[f64; C] = source.try_into().expect("a cell of C classes");
        *target = *source;
    } else {
        target.copy_from_slice(source);
    }
}

/// `target += source` over one cell's classes, the class loop unrolled where their
/// number `C` is known at compile time (0: the slices' length).
#[inline(always)]
pub(crate) fn add_classes<const C: usize>(target: &mut [f64], source: &[f64]) {
    if C > 0 {
        let target: &mut [f64; C] = target.try_into().expect("a cell of C classes");
        let source: &[f64; C] = source.try_into().expect("a cell of C classes");
        for c in 0..C {
            target[c] += source[c];
        }
    } else {
        target
            .iter_mut()
            .zip(source)
            .for_each(|(sum, &value)| *sum += value);
    }
}

/// `target += a b` entry by entry over one cell's classes, unrolled as [`add_classes`].
#[inline(always)]
pub(crate) fn add_products<const C: usize>(target: &mut [f64], a: &[f64], b: &[f64]) {
    if C > 0 {
        let target: &mut [f64; C] = target.try_into().expect("a cell of C classes");
        let a: &[f64; C] = a.try_into().expect("a cell of C classes");
        let b: &[f64; C] = b.try_into().expect("a cell of C classes");
        for c in 0..C {
            target[c] += a[c] * b[c];
        }
    } else {
        for ((sum, &x), &y) in target.iter_mut().zip(a).zip(b) {
            *sum += x * y;
        }
    }
}

/// `target += weight source` over one row's classes, unrolled as [`add_classes`].
#[inline(always)]
pub(crate) fn add_scaled<const C: usize>(target: &mut [f64], weight: f64, source: &[f64]) {
    if C > 0 {
        let target: &mut [f64; C] = target.try_into().expect("a row of C classes");
        let source: &[f64; C] = source.try_into().expect("a row of C classes");
        for c in 0..C {
            target[c] += weight * source[c];
        }
    } else {
        for (sum, &value) in target.iter_mut().zip(source) {
            *sum += weight * value;
        }
    }
}
