//! Binding of the vocabulary (`crate::vocabulary`): a `Vocabulary` class holding one
//! grow-only value -> code map per feature, coding numpy integer blocks, Arrow string
//! buffers and numpy object columns. Integers, strings, bytes and booleans are hashed in
//! Rust; any other hashable object gets a token from a per-feature dict kept here (the
//! core never sees Python objects). Pickles through `__getstate__` / `__setstate__` with
//! a format version.

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyReadwriteArray2,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyCapsule, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use rayon::prelude::*;

use super::finalizing::without_gil;
use super::{matrix, run, to_py_err};
use crate::arrow_columns::{read_column, ArrayStream, ArrowColumn};
use crate::encoding::MISSING;
use crate::error::{filled, with_capacity, HebError, Result as CoreResult};
use crate::vocabulary::{
    codes_buffer, Access, Coding, FeatureParts, FeatureVocabulary, Key, FORMAT_VERSION,
};

/// Per-feature maps from value to code that only grow (codes in order of first
/// appearance). Build with the number of features.
#[pyclass(module = "hebnb._core")]
pub(super) struct Vocabulary {
    features: Vec<FeatureVocabulary>,
    /// Per feature: object -> token, and the objects by token.
    object_tokens: Vec<Py<PyDict>>,
    objects: Vec<Py<PyList>>,
}

/// Values of an Arrow stream coded per block without the GIL (Ctrl-C is seen between
/// blocks).
const STREAM_BLOCK_ROWS: usize = 1 << 20;

/// Most cells coded on the calling thread instead of the pool.
const INLINE_CELLS: usize = 1 << 14;

/// Slots of the cache of str objects already coded in one column (a power of two).
const SEEN_SLOTS: usize = 1 << 12;
/// Columns shorter than this skip that cache (setting it up would cost more).
const SEEN_MIN_ROWS: usize = 256;
/// Cells after which the cache is dropped unless an eighth of them were hits.
const SEEN_TRIAL: usize = 256;

/// One feature's saved state: `(kinds, ints, text, text_offsets, objects)`.
type SavedFeature<'py> = (
    Vec<u8>,
    PyReadonlyArray1<'py, i64>,
    Vec<u8>,
    PyReadonlyArray1<'py, u64>,
    Bound<'py, PyList>,
);

/// How one Python value is coded.
enum Cell<'a> {
    Missing,
    Key(Key<'a>),
    /// Neither missing nor of a type the core hashes: goes through the object dict.
    Other,
}

/// The UTF-8 text of a Python string, or the error naming feature `name`.
#[inline]
fn text_of<'a>(text: &'a Bound<'_, PyString>, name: &str) -> PyResult<&'a str> {
    text.to_str().map_err(|_| {
        PyValueError::new_err(format!(
            "{name} holds a string that is not valid Unicode (a lone surrogate such as \
             '\\ud800'): categories must be encodable as UTF-8"
        ))
    })
}

fn classify<'a>(value: &'a Bound<'_, PyAny>, name: &str) -> PyResult<Cell<'a>> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Cell::Key(Key::Str(text_of(text, name)?)));
    }
    if value.is_none() {
        return Ok(Cell::Missing);
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Cell::Key(Key::Bool(flag.is_true())));
    }
    if value.cast::<PyInt>().is_ok() {
        return Ok(match value.extract::<i64>() {
            Ok(v) => Cell::Key(Key::Int(v)),
            Err(_) => Cell::Other, // beyond int64: kept as a Python int
        });
    }
    if let Ok(number) = value.cast::<PyFloat>() {
        let v = number.value();
        if v.is_nan() {
            return Ok(Cell::Missing);
        }
        if !v.is_finite() || v != v.floor() {
            return Err(PyValueError::new_err(format!(
                "{name} holds floats with a fractional part (or infinite), which are not \
                 categories: bin numeric columns first"
            )));
        }
        // whole floats are the integers they equal (1.0 and 1 are one category)
        // [-2^63, 2^63): the float range of int64, its least value exact
        return Ok(if (-(2f64.powi(63))..2f64.powi(63)).contains(&v) {
            Cell::Key(Key::Int(v as i64))
        } else {
            Cell::Other
        });
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(Cell::Key(Key::Bytes(bytes.as_bytes())));
    }
    Ok(Cell::Other)
}

/// What codes the cells of an object column that are not exact `str`s: the feature's
/// dict of hashable objects to tokens.
struct OtherObjects<'a, 'py> {
    /// object -> token, and the objects by token.
    tokens: &'a Bound<'py, PyDict>,
    objects: &'a Bound<'py, PyList>,
}

impl OtherObjects<'_, '_> {
    /// The code of a cell that is not an exact `str`: a value the core hashes, missing,
    /// or an object coded through its token. Kept out of line, so that the str cells'
    /// loop stays small.
    #[inline(never)]
    fn code<A: Access>(
        &self,
        coding: &mut Coding<A>,
        value: &Bound<'_, PyAny>,
        name: &str,
    ) -> PyResult<i32> {
        let mut cell = classify(value, name)?;
        if matches!(cell, Cell::Other) {
            match self.token(value, coding.0.grows(), name)? {
                Some(token) => cell = Cell::Key(Key::Object(token)),
                None => return Ok(crate::encoding::UNKNOWN),
            }
        }
        match cell {
            Cell::Key(key) => coding.code(key).map_err(to_py_err),
            _ => Ok(MISSING),
        }
    }

    /// Token of a hashable object (a new one when `grow`), or None.
    fn token(&self, value: &Bound<'_, PyAny>, grow: bool, name: &str) -> PyResult<Option<u64>> {
        let found = self.tokens.get_item(value).map_err(|error| {
            PyValueError::new_err(format!(
                "{name} holds values that cannot be categories ({error}): categories must be \
                 hashable, such as strings, numbers or tuples"
            ))
        })?;
        if let Some(token) = found {
            return Ok(Some(token.extract::<u64>()?));
        }
        if !grow {
            return Ok(None);
        }
        let token = self.objects.len() as u64;
        self.tokens.set_item(value, token)?;
        self.objects.append(value)?;
        Ok(Some(token))
    }
}

impl Vocabulary {
    fn check_feature(&self, feature: usize) -> PyResult<()> {
        if feature < self.features.len() {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!(
                "feature {feature} outside the {} features of the vocabulary",
                self.features.len()
            )))
        }
    }
}

/// Codes of one column of Python objects (see `encode_objects`) against one feature's
/// vocabulary (`coding`) and object dicts (`others`); on an error the caller rolls back
/// what joined.
fn code_objects<A: Access>(
    py: Python<'_>,
    coding: &mut Coding<A>,
    others: &OtherObjects<'_, '_>,
    values: ndarray::ArrayView1<'_, Py<PyAny>>,
    name: &str,
) -> PyResult<Vec<i32>> {
    // an exact str (the common cell) is told by its type pointer, without the
    // type-flags call of the general check
    let mut code_cell = |value: &Bound<'_, PyAny>| match value.cast_exact::<PyString>() {
        Ok(text) => coding.code_str(text_of(text, name)?).map_err(to_py_err),
        Err(_) => others.code(coding, value, name),
    };
    let mut codes = codes_buffer(values.len()).map_err(to_py_err)?;
    // Equal strings are often one object (pandas' CSV reader shares them within a
    // column): a direct-mapped cache from a str object's address to its code skips
    // reading and hashing it again. The array holds every value for the whole call,
    // so an address names one immutable string throughout. Where the first cells are
    // distinct objects (one object a cell, as `astype(str)` makes them), the cache
    // only costs: it is dropped after a trial.
    let trial = if values.len() >= SEEN_MIN_ROWS {
        SEEN_TRIAL
    } else {
        0
    };
    let mut seen = vec![(0_usize, 0_i32); if trial > 0 { SEEN_SLOTS } else { 0 }];
    let mut hits = 0;
    let mut through_cache = |value: &Bound<'_, PyAny>, hits: &mut usize| {
        let address = value.as_ptr() as usize;
        let slot = &mut seen[(address >> 4) & (SEEN_SLOTS - 1)];
        if slot.0 == address {
            *hits += 1;
            return Ok(slot.1);
        }
        let code = code_cell(value)?;
        if value.is_exact_instance_of::<PyString>() {
            *slot = (address, code);
        }
        PyResult::Ok(code)
    };
    for value in values.iter().take(trial) {
        codes.push(through_cache(value.bind(py), &mut hits)?);
    }
    if trial > 0 && hits * 8 >= SEEN_TRIAL {
        for value in values.iter().skip(trial) {
            codes.push(through_cache(value.bind(py), &mut hits)?);
        }
    } else {
        for value in values.iter().skip(trial) {
            let value = value.bind(py);
            // a known short str straight from the lookup, everything else the general
            // way (written out here, not through `code_cell`: measured fewer
            // instructions per cell)
            let code = match value.cast_exact::<PyString>() {
                Ok(text) => {
                    let text = text_of(text, name)?;
                    match coding.0.vocabulary().known_short_str(text) {
                        Some(code) => code as i32,
                        None => coding.code_str(text).map_err(to_py_err)?,
                    }
                }
                Err(_) => others.code(coding, value, name)?,
            };
            codes.push(code);
        }
    }
    Ok(codes)
}

/// The codes of every array of `stream` (see `encode_arrow_stream`) against one feature's
/// vocabulary, by blocks of `STREAM_BLOCK_ROWS` values coded without the GIL, Ctrl-C
/// checked between blocks; None for a type not read here. The caller rolls back on None
/// or an error.
fn code_stream<A: Access + Send>(
    py: Python<'_>,
    coding: &mut Coding<A>,
    stream: &mut ArrayStream,
    name: &str,
) -> PyResult<Option<Vec<i32>>> {
    let schema = stream.schema().map_err(to_py_err)?;
    let mut codes: Vec<i32> = Vec::new();
    while let Some(array) = stream.next_array().map_err(to_py_err)? {
        // SAFETY: `schema` and `array` are owned here and released after their use
        let column = unsafe { read_column(&schema.0, &array.0) }.map_err(to_py_err)?;
        let Some(column) = column.filter(ArrowColumn::fits_int64) else {
            return Ok(None);
        };
        let n = column.len();
        codes.try_reserve(n).map_err(|_| {
            to_py_err(HebError::Allocation {
                what: "category codes",
                bytes: (codes.len() + n) as u128 * 4,
            })
        })?;
        for start in (0..n).step_by(STREAM_BLOCK_ROWS) {
            let block = column.slice(start, STREAM_BLOCK_ROWS.min(n - start));
            let coded = without_gil(py, || coding.encode_arrow(&block, name)).map_err(to_py_err)?;
            codes.extend_from_slice(&coded);
            py.check_signals()?;
        }
    }
    Ok(Some(codes))
}

impl Vocabulary {
    fn lengths_now(&self, py: Python<'_>) -> Vec<(usize, usize)> {
        (0..self.features.len())
            .map(|f| (self.features[f].len(), self.objects[f].bind(py).len()))
            .collect()
    }

    /// Refuses a feature whose object values name tokens beyond its first `n_objects`
    /// objects (a corrupt state or a mark of another vocabulary: a later object would
    /// take such a token and share its code).
    fn check_object_tokens(
        feature: &FeatureVocabulary,
        n_values: usize,
        n_objects: usize,
    ) -> PyResult<()> {
        let beyond = feature
            .values()
            .take(n_values)
            .any(|key| matches!(key, Key::Object(t) if t >= n_objects as u64));
        if beyond {
            return Err(PyValueError::new_err(
                "corrupt vocabulary: a value names an object the vocabulary does not hold",
            ));
        }
        Ok(())
    }

    fn roll_back(&mut self, py: Python<'_>, lengths: &[(usize, usize)]) -> PyResult<()> {
        for (f, &(n_values, n_objects)) in lengths.iter().enumerate() {
            self.features[f].truncate(n_values);
            let objects = self.objects[f].bind(py);
            let tokens = self.object_tokens[f].bind(py);
            while objects.len() > n_objects {
                let last = objects.get_item(objects.len() - 1)?;
                tokens.del_item(&last)?;
                objects.del_item(objects.len() - 1)?;
            }
        }
        Ok(())
    }
}

fn codes_to_array<'py>(py: Python<'py>, codes: Vec<i32>) -> Bound<'py, PyArray1<i32>> {
    codes.into_pyarray(py)
}

/// Runs `$body` with `$coding` a [`Coding`] of feature `$feature`'s vocabulary that grows
/// it (an exclusive borrow of the `Vocabulary`) when `$grow`, else one that only reads it
/// (a shared borrow: any number of threads may code at once, and a process forked while
/// one does inherits no exclusive borrow).
macro_rules! with_coding {
    ($slf:expr, $feature:expr, $grow:expr, |$this:ident, $coding:ident| $body:expr) => {
        if $grow {
            let mut guard = $slf.try_borrow_mut()?;
            let $this = &mut *guard;
            let mut $coding = Coding(&mut $this.features[$feature]);
            $body
        } else {
            let guard = $slf.try_borrow()?;
            let $this = &*guard;
            let mut $coding = Coding(&$this.features[$feature]);
            $body
        }
    };
}

#[pymethods]
impl Vocabulary {
    #[new]
    #[pyo3(signature = (n_features = 0))]
    fn new(py: Python<'_>, n_features: usize) -> PyResult<Self> {
        // sized by the caller: refused as MemoryError, never an abort
        let features =
            filled(n_features, FeatureVocabulary::default(), "vocabularies").map_err(to_py_err)?;
        let mut object_tokens = with_capacity(n_features, "vocabularies").map_err(to_py_err)?;
        let mut objects = with_capacity(n_features, "vocabularies").map_err(to_py_err)?;
        for _ in 0..n_features {
            object_tokens.push(PyDict::new(py).unbind());
            objects.push(PyList::empty(py).unbind());
        }
        Ok(Vocabulary {
            features,
            object_tokens,
            objects,
        })
    }

    /// Number of features.
    #[getter]
    fn n_features(&self) -> usize {
        self.features.len()
    }

    /// Number of categories of every feature.
    fn lengths(&self) -> Vec<usize> {
        self.features.iter().map(FeatureVocabulary::len).collect()
    }

    /// Number of categories of one feature (`lengths()[feature]` without the other
    /// features' counts: per-feature loops over wide data stay linear).
    fn length(&self, feature: usize) -> PyResult<usize> {
        self.check_feature(feature)?;
        Ok(self.features[feature].len())
    }

    /// The growth marks `truncate` returns to: one `(values, objects)` pair per feature.
    fn mark(&self, py: Python<'_>) -> Vec<(usize, usize)> {
        self.lengths_now(py)
    }

    /// Forgets what was added since `mark` (a batch that failed after coding).
    fn truncate(&mut self, py: Python<'_>, mark: Vec<(usize, usize)>) -> PyResult<()> {
        if mark.len() != self.features.len() {
            return Err(PyValueError::new_err("mark of another vocabulary"));
        }
        for (f, &(n_values, n_objects)) in mark.iter().enumerate() {
            if n_values > self.features[f].len() || n_objects > self.objects[f].bind(py).len() {
                return Err(PyValueError::new_err(
                    "mark of another vocabulary: it holds more values than this one",
                ));
            }
            Self::check_object_tokens(&self.features[f], n_values, n_objects)?;
        }
        self.roll_back(py, &mark)
    }

    /// Codes a block of integer columns `values (F, S)` (a strided view is fine),
    /// `missing (F, S)` marking missing cells, into `out (F, S)` (a strided view is fine:
    /// a block of rows of a longer table's codes); grows the vocabularies when `grow`,
    /// else codes unknown values -2. Features in parallel, each thread writing its
    /// features' rows of `out` (no intermediate copy); nothing grows if any fails.
    ///
    /// Coding without growing only reads the vocabulary, so it takes a shared borrow:
    /// several threads can predict with one model at once, and a process forked while
    /// another thread codes inherits no exclusive borrow.
    #[pyo3(signature = (values, missing, *, grow, n_jobs, out))]
    fn encode_int_block<'py>(
        slf: &Bound<'py, Self>,
        values: PyReadonlyArray2<'py, i64>,
        missing: Option<PyReadonlyArray2<'py, bool>>,
        grow: bool,
        n_jobs: usize,
        mut out: PyReadwriteArray2<'py, i32>,
    ) -> PyResult<()> {
        let py = slf.py();
        let values = values.as_array();
        let missing = missing.as_ref().map(|m| m.as_array());
        let out = out.as_array_mut();
        if out.dim() != values.dim() {
            return Err(PyValueError::new_err(format!(
                "codes output of shape {:?} for values of shape {:?}",
                out.dim(),
                values.dim()
            )));
        }
        if grow {
            return slf
                .try_borrow_mut()?
                .grow_int_block(py, values, missing, out, n_jobs);
        }
        let this = slf.try_borrow()?;
        this.check_block(values, missing)?;
        let features: Vec<&FeatureVocabulary> = this.features.iter().collect();
        code_block(py, features, out, n_jobs, |f, vocabulary, rows, out| {
            code_int_cells(values, missing, (f, rows), out, |v| {
                Ok(vocabulary
                    .get(Key::Int(v))
                    .map_or(crate::encoding::UNKNOWN, |code| code as i32))
            })
        })
    }

    /// Codes one integer column of feature `feature` (`missing` marks missing cells).
    #[pyo3(signature = (feature, values, missing, *, grow))]
    fn encode_ints<'py>(
        slf: &Bound<'py, Self>,
        feature: usize,
        values: PyReadonlyArray1<'py, i64>,
        missing: Option<PyReadonlyArray1<'py, bool>>,
        grow: bool,
    ) -> PyResult<Bound<'py, PyArray1<i32>>> {
        slf.try_borrow()?.check_feature(feature)?;
        let values = values.as_array();
        let mask = match &missing {
            Some(m) => Some(m.as_slice()?),
            None => None,
        };
        let codes = with_coding!(slf, feature, grow, |_this, coding| coding
            .encode_ints(values.iter().copied(), mask))
        .map_err(to_py_err)?;
        Ok(codes_to_array(slf.py(), codes))
    }

    /// Codes one Arrow string (or binary-as-text) array of feature `feature` from its
    /// buffers: `offsets` (int32 or int64, length + 1 entries from the array's offset),
    /// `data` (uint8), `validity` (uint8 bitmap or None) starting at bit `bit_offset`;
    /// only the strings at `positions`, in that order, when given.
    #[pyo3(signature = (feature, offsets, data, validity, bit_offset, *, grow, name, positions=None))]
    #[allow(clippy::too_many_arguments)]
    fn encode_utf8<'py>(
        slf: &Bound<'py, Self>,
        feature: usize,
        offsets: &Bound<'py, PyAny>,
        data: PyReadonlyArray1<'py, u8>,
        validity: Option<PyReadonlyArray1<'py, u8>>,
        bit_offset: usize,
        grow: bool,
        name: &str,
        positions: Option<PyReadonlyArray1<'py, i64>>,
    ) -> PyResult<Bound<'py, PyArray1<i32>>> {
        let py = slf.py();
        slf.try_borrow()?.check_feature(feature)?;
        let data = data.as_slice()?;
        let validity = match &validity {
            Some(v) => Some((v.as_slice()?, bit_offset)),
            None => None,
        };
        let positions = match &positions {
            Some(p) => Some(p.as_slice()?),
            None => None,
        };
        let small = offsets.extract::<PyReadonlyArray1<'py, i32>>().ok();
        let large = match small {
            Some(_) => None,
            None => Some(offsets.extract::<PyReadonlyArray1<'py, i64>>()?),
        };
        let small = small.as_ref().map(|o| o.as_slice()).transpose()?;
        let large = large.as_ref().map(|o| o.as_slice()).transpose()?;
        let codes = with_coding!(slf, feature, grow, |_this, coding| without_gil(py, || {
            match (small, large) {
                (Some(o), _) => coding.encode_utf8(o, data, validity, positions, name),
                (None, Some(o)) => coding.encode_utf8(o, data, validity, positions, name),
                (None, None) => unreachable!("one of the offsets was extracted"),
            }
        }))
        .map_err(to_py_err)?;
        Ok(codes_to_array(py, codes))
    }

    /// Codes one Arrow string_view array of feature `feature` from its buffers: `views`
    /// (uint8, 16 bytes a string from the array's offset), the variadic data `buffers`
    /// (uint8 each), `validity` (uint8 bitmap or None) starting at bit `bit_offset`; only
    /// the strings at `positions`, in that order, when given.
    #[pyo3(signature = (feature, views, buffers, validity, bit_offset, *, grow, name, positions=None))]
    #[allow(clippy::too_many_arguments)]
    fn encode_utf8_views<'py>(
        slf: &Bound<'py, Self>,
        feature: usize,
        views: PyReadonlyArray1<'py, u8>,
        buffers: Vec<PyReadonlyArray1<'py, u8>>,
        validity: Option<PyReadonlyArray1<'py, u8>>,
        bit_offset: usize,
        grow: bool,
        name: &str,
        positions: Option<PyReadonlyArray1<'py, i64>>,
    ) -> PyResult<Bound<'py, PyArray1<i32>>> {
        let py = slf.py();
        slf.try_borrow()?.check_feature(feature)?;
        let views = views.as_slice()?;
        let buffers = buffers
            .iter()
            .map(|b| b.as_slice())
            .collect::<Result<Vec<_>, _>>()?;
        let validity = match &validity {
            Some(v) => Some((v.as_slice()?, bit_offset)),
            None => None,
        };
        let positions = match &positions {
            Some(p) => Some(p.as_slice()?),
            None => None,
        };
        let codes = with_coding!(slf, feature, grow, |_this, coding| without_gil(py, || {
            coding.encode_utf8_views(views, &buffers, validity, positions, name)
        }))
        .map_err(to_py_err)?;
        Ok(codes_to_array(py, codes))
    }

    /// Codes one Arrow column of feature `feature` read in Rust through the Arrow C
    /// stream interface (`capsule`: what `__arrow_c_stream__()` of a pyarrow
    /// ChunkedArray, a polars Series, ... returned, called by the caller so that no
    /// Python code runs under this call), chunk by chunk, without pyarrow or a Python
    /// object per value. None (nothing coded, the vocabulary unchanged) when the
    /// column's type is not one the reader reads (`crate::arrow_columns`), for the caller
    /// to read it another way.
    #[pyo3(signature = (feature, capsule, *, grow, name))]
    fn encode_arrow_stream<'py>(
        slf: &Bound<'py, Self>,
        feature: usize,
        capsule: &Bound<'py, PyAny>,
        grow: bool,
        name: &str,
    ) -> PyResult<Option<Bound<'py, PyArray1<i32>>>> {
        let py = slf.py();
        slf.try_borrow()?.check_feature(feature)?;
        let capsule = capsule
            .cast::<PyCapsule>()
            .map_err(|_| PyTypeError::new_err("__arrow_c_stream__ did not return a PyCapsule"))?;
        let pointer = capsule.pointer_checked(Some(c"arrow_array_stream"))?;
        // SAFETY: the capsule holds a live stream for as long as it lives (to the end of
        // this call); the capsule's destructor releases it
        let mut stream = unsafe { ArrayStream::new(pointer.as_ptr().cast()) }.map_err(to_py_err)?;
        let mark = slf.try_borrow()?.features[feature].len();
        let coded = with_coding!(slf, feature, grow, |_this, coding| code_stream(
            py,
            &mut coding,
            &mut stream,
            name
        ));
        if grow && !matches!(coded, Ok(Some(_))) {
            slf.try_borrow_mut()?.features[feature].truncate(mark);
        }
        Ok(coded?.map(|codes| codes_to_array(py, codes)))
    }

    /// Codes one column of Python objects: str, bytes, bool, int, float (whole) and None
    /// (missing) by value, any other hashable value as an object. The caller normalises
    /// first the cells [`cells_to_normalize`] lists (a numpy scalar to its Python value,
    /// pandas NA to None). Unknown values are -2 unless `grow`; `name` names the feature
    /// in errors.
    #[pyo3(signature = (feature, values, *, grow, name))]
    fn encode_objects<'py>(
        slf: &Bound<'py, Self>,
        feature: usize,
        values: PyReadonlyArray1<'py, Py<PyAny>>,
        grow: bool,
        name: &str,
    ) -> PyResult<Bound<'py, PyArray1<i32>>> {
        let py = slf.py();
        // what to roll back to, only where the call grows the vocabulary
        let mark = {
            let this = slf.try_borrow()?;
            this.check_feature(feature)?;
            grow.then(|| this.lengths_now(py))
        };
        let values = values.as_array();
        let coded = with_coding!(slf, feature, grow, |this, coding| {
            // the dicts beside the borrowed vocabulary (disjoint fields)
            let others = OtherObjects {
                tokens: this.object_tokens[feature].bind(py),
                objects: this.objects[feature].bind(py),
            };
            code_objects(py, &mut coding, &others, values, name)
        });
        match (coded, mark) {
            (Ok(codes), _) => Ok(codes_to_array(py, codes)),
            (Err(error), Some(mark)) => {
                slf.try_borrow_mut()?.roll_back(py, &mark)?;
                Err(error)
            }
            (Err(error), None) => Err(error),
        }
    }

    /// Codes a block of object columns `values (F, S)` against the vocabulary without
    /// growing it (-2 unknown): scoring a few rows of a DataFrame in one call instead of
    /// one per column. `names` names each feature in errors; cells as in
    /// `encode_objects`.
    #[pyo3(signature = (values, *, names))]
    fn encode_object_block<'py>(
        slf: &Bound<'py, Self>,
        values: PyReadonlyArray2<'py, Py<PyAny>>,
        names: Vec<String>,
    ) -> PyResult<Bound<'py, PyArray2<i32>>> {
        let py = slf.py();
        let this = slf.try_borrow()?;
        let values = values.as_array();
        let (n_features, n_rows) = values.dim();
        if n_features != this.features.len() || names.len() != n_features {
            return Err(PyValueError::new_err(format!(
                "{n_features} object columns and {} names for a vocabulary of {} features",
                names.len(),
                this.features.len()
            )));
        }
        let mut flat = codes_buffer(n_features * n_rows).map_err(to_py_err)?;
        for (f, name) in names.iter().enumerate() {
            let others = OtherObjects {
                tokens: this.object_tokens[f].bind(py),
                objects: this.objects[f].bind(py),
            };
            let mut coding = Coding(&this.features[f]);
            flat.extend(code_objects(py, &mut coding, &others, values.row(f), name)?);
        }
        matrix(py, (n_features, n_rows), flat)
    }

    /// The categories of `feature` in insertion order, as Python values.
    fn values<'py>(&self, py: Python<'py>, feature: usize) -> PyResult<Bound<'py, PyList>> {
        self.check_feature(feature)?;
        let objects = self.objects[feature].bind(py);
        let list = PyList::empty(py);
        for value in self.features[feature].values() {
            match value {
                Key::Bool(b) => list.append(b)?,
                Key::Int(v) => list.append(v)?,
                Key::Str(s) => list.append(s)?,
                Key::Bytes(b) => list.append(PyBytes::new(py, b))?,
                Key::Object(t) => list.append(objects.get_item(t as usize)?)?,
            }
        }
        Ok(list)
    }

    /// The categories of `feature` in insertion order as int64 when all are integers
    /// (`bools` also accepts booleans as 0/1), else None.
    fn int_values<'py>(
        &self,
        py: Python<'py>,
        feature: usize,
    ) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        self.check_feature(feature)?;
        let mut out = Vec::with_capacity(self.features[feature].len());
        for value in self.features[feature].values() {
            match value {
                Key::Int(v) => out.push(v),
                _ => return Ok(None),
            }
        }
        Ok(Some(out.into_pyarray(py)))
    }

    /// Whether `feature` holds values kept as Python objects (sorted by Python then).
    fn has_objects(&self, py: Python<'_>, feature: usize) -> PyResult<bool> {
        self.check_feature(feature)?;
        Ok(self.objects[feature].bind(py).len() > 0)
    }

    /// The codes of `feature` in sorted order of their values (by type: booleans,
    /// integers, strings, bytes, objects; then by value).
    fn sorted_order<'py>(
        &self,
        py: Python<'py>,
        feature: usize,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        self.check_feature(feature)?;
        let order: Vec<i64> = self.features[feature]
            .sorted_order()
            .into_iter()
            .map(i64::from)
            .collect();
        Ok(order.into_pyarray(py))
    }

    /// A copy (the maps and the object lists are duplicated).
    fn copy(&self, py: Python<'_>) -> PyResult<Self> {
        Ok(Vocabulary {
            features: self.features.clone(),
            object_tokens: self
                .object_tokens
                .iter()
                .map(|d| Ok(d.bind(py).copy()?.unbind()))
                .collect::<PyResult<_>>()?,
            objects: self
                .objects
                .iter()
                .map(|l| {
                    let l = l.bind(py);
                    Ok(PyList::new(py, l.iter())?.unbind())
                })
                .collect::<PyResult<_>>()?,
        })
    }

    fn __copy__(&self, py: Python<'_>) -> PyResult<Self> {
        self.copy(py)
    }

    fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.copy(py)
    }

    fn __getnewargs__<'py>(&self, py: Python<'py>) -> Bound<'py, PyTuple> {
        PyTuple::empty(py)
    }

    /// `{"format": version, "features": [(kinds, ints, text, text_offsets, objects)]}`.
    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let features = PyList::empty(py);
        for (f, vocabulary) in self.features.iter().enumerate() {
            let parts = vocabulary.to_parts();
            let item = (
                PyBytes::new(py, &parts.kinds),
                parts.ints.into_pyarray(py),
                PyBytes::new(py, &parts.text),
                parts.text_offsets.into_pyarray(py),
                self.objects[f].bind(py).clone(),
            );
            features.append(item)?;
        }
        let state = PyDict::new(py);
        state.set_item("format", FORMAT_VERSION)?;
        state.set_item("features", features)?;
        Ok(state)
    }

    fn __setstate__(&mut self, py: Python<'_>, state: &Bound<'_, PyAny>) -> PyResult<()> {
        let state = state
            .cast::<PyDict>()
            .map_err(|_| PyTypeError::new_err("a vocabulary state is a dict"))?;
        let format: u32 = match state.get_item("format")? {
            Some(v) => v.extract()?,
            None => 0,
        };
        if format != FORMAT_VERSION {
            return Err(PyValueError::new_err(format!(
                "this vocabulary was saved in format {format}; this build of hebnb reads \
                 format {FORMAT_VERSION}"
            )));
        }
        let items = state
            .get_item("features")?
            .ok_or_else(|| PyValueError::new_err("vocabulary state without features"))?;
        let mut features = Vec::new();
        let (mut object_tokens, mut objects) = (Vec::new(), Vec::new());
        for item in items.try_iter()? {
            let item = item?;
            let (kinds, ints, text, text_offsets, values): SavedFeature<'_> = item.extract()?;
            let parts = FeatureParts {
                kinds,
                ints: ints.as_array().to_vec(),
                text,
                text_offsets: text_offsets.as_array().to_vec(),
            };
            let feature = FeatureVocabulary::from_parts(&parts).map_err(to_py_err)?;
            Self::check_object_tokens(&feature, feature.len(), values.len())?;
            features.push(feature);
            let tokens = PyDict::new(py);
            for (token, value) in values.iter().enumerate() {
                tokens.set_item(value, token as u64)?;
            }
            object_tokens.push(tokens.unbind());
            objects.push(PyList::new(py, values.iter())?.unbind());
        }
        self.features = features;
        self.object_tokens = object_tokens;
        self.objects = objects;
        Ok(())
    }
}

impl Vocabulary {
    /// Checks a block against the vocabulary: one row per feature, a mask of its shape.
    fn check_block(
        &self,
        values: ndarray::ArrayView2<'_, i64>,
        missing: Option<ndarray::ArrayView2<'_, bool>>,
    ) -> PyResult<()> {
        let n_features = values.nrows();
        if n_features != self.features.len() {
            return Err(PyValueError::new_err(format!(
                "X has {n_features} features, the vocabulary {}",
                self.features.len()
            )));
        }
        if let Some(mask) = &missing {
            if mask.dim() != values.dim() {
                return Err(PyValueError::new_err("missing-value mask of another shape"));
            }
        }
        Ok(())
    }

    /// [`Vocabulary::encode_int_block`] growing the vocabularies.
    fn grow_int_block(
        &mut self,
        py: Python<'_>,
        values: ndarray::ArrayView2<'_, i64>,
        missing: Option<ndarray::ArrayView2<'_, bool>>,
        out: ndarray::ArrayViewMut2<'_, i32>,
        n_jobs: usize,
    ) -> PyResult<()> {
        self.check_block(values, missing)?;
        let mark = self.lengths_now(py);
        let features: Vec<&mut FeatureVocabulary> = self.features.iter_mut().collect();
        let result = code_block(py, features, out, n_jobs, |f, vocabulary, rows, out| {
            code_int_cells(values, missing, (f, rows), out, |v| {
                Coding(&mut **vocabulary).code(Key::Int(v))
            })
        });
        if result.is_err() {
            self.roll_back(py, &mark)?;
        }
        result
    }
}

/// Writes the codes of feature `f`'s cells in `rows` of an integer block into `out`:
/// `code(v)` of each value, [`MISSING`] where `missing` marks the cell.
fn code_int_cells(
    values: ndarray::ArrayView2<'_, i64>,
    missing: Option<ndarray::ArrayView2<'_, bool>>,
    (f, rows): (usize, std::ops::Range<usize>),
    mut out: ndarray::ArrayViewMut1<'_, i32>,
    mut code: impl FnMut(i64) -> CoreResult<i32>,
) -> CoreResult<()> {
    let cells = values.slice(ndarray::s![f, rows.clone()]);
    match missing {
        Some(mask) => {
            let mask = mask.slice(ndarray::s![f, rows]);
            for ((&v, &m), slot) in cells.iter().zip(mask.iter()).zip(out.iter_mut()) {
                *slot = if m { MISSING } else { code(v)? };
            }
        }
        None => {
            for (&v, slot) in cells.iter().zip(out.iter_mut()) {
                *slot = code(v)?;
            }
        }
    }
    Ok(())
}

/// Rows of a block coded feature after feature before the next rows: the block is
/// usually a transposed (S, F) C-order array, where a feature's column is strided, and a
/// tile of rows stays in cache while each feature reads its column of it (coding a whole
/// column at a time read each row's cache line once per feature).
const TILE_ROWS: usize = 256;

/// Codes a block into `out (F, n_rows)`, tile of rows by tile of rows ([`TILE_ROWS`]):
/// `code_tile(f, vocabulary, rows, out)` writes the codes of feature `f`'s cells in
/// `rows` into `out`. Each feature's rows are coded in order by one thread. One thread,
/// or a few cells, are coded on the calling thread (a pool's hand-off costs more: a
/// context switch, milliseconds on a loaded machine); otherwise the features go to a
/// local pool in two contiguous groups a thread, each group reading the block once.
fn code_block<T: Send>(
    py: Python<'_>,
    features: Vec<T>,
    mut out: ndarray::ArrayViewMut2<'_, i32>,
    n_jobs: usize,
    code_tile: impl Fn(usize, &mut T, std::ops::Range<usize>, ndarray::ArrayViewMut1<'_, i32>) -> CoreResult<()>
        + Send
        + Sync,
) -> PyResult<()> {
    let (cells, n_rows) = (out.len(), out.ncols());
    let mut work: Vec<(usize, T, ndarray::ArrayViewMut1<'_, i32>)> = features
        .into_iter()
        .zip(out.outer_iter_mut())
        .enumerate()
        .map(|(f, (vocabulary, row))| (f, vocabulary, row))
        .collect();
    let code_group = |group: &mut [(usize, T, ndarray::ArrayViewMut1<'_, i32>)]| {
        for start in (0..n_rows).step_by(TILE_ROWS) {
            crate::interrupt::check()?;
            let rows = start..(start + TILE_ROWS).min(n_rows);
            for (f, vocabulary, row) in group.iter_mut() {
                let out = row.slice_mut(ndarray::s![rows.clone()]);
                code_tile(*f, vocabulary, rows.clone(), out)?;
            }
        }
        Ok(())
    };
    if n_jobs <= 1 || cells <= INLINE_CELLS {
        code_group(&mut work).map_err(to_py_err)
    } else {
        let per_group = work.len().div_ceil(2 * n_jobs).max(1);
        run(py, n_jobs, || {
            work.par_chunks_mut(per_group).try_for_each(code_group)
        })
    }
}

/// The distinct codes of a category column (`-1` missing) in order of first appearance
/// (`crate::vocabulary::first_appearance`).
#[pyfunction]
#[pyo3(signature = (codes, /, *, n_categories))]
fn first_appearance<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray1<'py, i64>,
    n_categories: usize,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let codes = codes.as_array();
    let order = match codes.as_slice() {
        Some(codes) => crate::vocabulary::first_appearance(codes, n_categories),
        None => crate::vocabulary::first_appearance(&codes.to_vec(), n_categories),
    }
    .map_err(to_py_err)?;
    Ok(order.into_pyarray(py))
}

/// Positions of the cells of an object column that `encode_objects` would code as
/// objects (neither str, bytes, bool, int64, float nor None), for the caller to
/// normalise first, in Python: Python code called under this module's frames is where a
/// daemon thread can be stopped at interpreter exit, whose unwinding through them would
/// abort the process (see `finalizing`). A cell `encode_objects` would refuse is not
/// listed: coding it raises the error.
#[pyfunction]
#[pyo3(signature = (values, /))]
fn cells_to_normalize<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, Py<PyAny>>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let mut positions: Vec<i64> = Vec::new();
    for (position, value) in values.as_array().iter().enumerate() {
        let value = value.bind(py);
        if value.cast_exact::<PyString>().is_err() && matches!(classify(value, ""), Ok(Cell::Other))
        {
            // grown as a Vec grows, but fallibly: a column can be all such cells
            if positions.len() == positions.capacity() {
                let more = positions.capacity().max(64);
                positions.try_reserve(more).map_err(|_| {
                    to_py_err(HebError::Allocation {
                        what: "cells to normalise",
                        bytes: 16 * more as u128,
                    })
                })?;
            }
            positions.push(position as i64);
        }
    }
    Ok(positions.into_pyarray(py))
}

/// Adds the class to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Vocabulary>()?;
    m.add_function(wrap_pyfunction!(cells_to_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(first_appearance, m)?)?;
    Ok(())
}
