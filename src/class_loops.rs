//! The number of classes as a compile-time constant for the hot class loops: a loop over
//! a cell's `C` classes unrolls, and its bounds are checked once, where `C` is known
//! (measured: the weighted models' passes and Naive Bayes scoring, docs/discriminative.md).

/// Evaluates the block `$body` with the constant `$classes` set to `$n_classes` where the
/// passes are compiled for that number of classes (2 to 10: the class loops unroll), else
/// to 0 (a loop over any number).
macro_rules! by_class_count {
    ($n_classes:expr, $classes:ident, $body:block) => {
        match $n_classes {
            2 => {
                const $classes: usize = 2;
                $body
            }
            3 => {
                const $classes: usize = 3;
                $body
            }
            4 => {
                const $classes: usize = 4;
                $body
            }
            5 => {
                const $classes: usize = 5;
                $body
            }
            6 => {
                const $classes: usize = 6;
                $body
            }
            7 => {
                const $classes: usize = 7;
                $body
            }
            8 => {
                const $classes: usize = 8;
                $body
            }
            9 => {
                const $classes: usize = 9;
                $body
            }
            10 => {
                const $classes: usize = 10;
                $body
            }
            _ => {
                const $classes: usize = 0;
                $body
            }
        }
    };
}

pub(crate) use by_class_count;
