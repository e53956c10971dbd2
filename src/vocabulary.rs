//! The category vocabulary of every feature: a map from value to code that only grows.
//!
//! SPEC "Weights and vocabularies": the vocabulary comes from X alone. Codes are given in
//! order of first appearance (insertion order), so a batch is coded in O(rows of the batch)
//! whatever the size of the vocabulary, and a value once coded keeps its code for ever:
//! counts of later batches add to the same cells (SPEC "Online learning and forgetting").
//! First appearance is also invariant under any one-to-one relabelling of the values, so
//! the same data as strings, as pandas categories or as integers gets the same codes and
//! so bit-identical models. A sorted view ([`FeatureVocabulary::sorted_order`]) gives the
//! order the Python API promises for `categories_`.
//!
//! Values are compared by type and value: the integer 1, the string "1", the bytes b"1"
//! and the boolean True are four different categories. Values of other types (tuples,
//! dates, ...) are kept by the bindings, which hand the core an opaque token per distinct
//! object (`Value::Object`).
//!
//! Coded cells are `MISSING` (-1) for a missing value and `UNKNOWN` (-2) for a value not
//! in the vocabulary when the vocabulary may not grow.

use rustc_hash::FxHashMap;

use crate::arrow_columns::{ArrowColumn, Offsets, Validity};
use crate::encoding::{MISSING, UNKNOWN};
use crate::error::{HebError, Result};

/// A category value as the vocabulary keeps it. A string of at most `SHORT` bytes is
/// kept as its packed bytes (the key of its map entry), with no allocation of its own:
/// a category column or a first fit inserts thousands of them at once.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Bool(bool),
    Int(i64),
    /// The little-endian bytes of [`pack`]: the string, then its length in the last byte.
    ShortStr([u8; 16]),
    Str(Box<str>),
    Bytes(Box<[u8]>),
    /// A value of another type, named by a token the bindings assign.
    Object(u64),
}

impl Value {
    /// The value as a key (borrowed from it).
    fn key(&self) -> Key<'_> {
        match self {
            Value::Bool(b) => Key::Bool(*b),
            Value::Int(v) => Key::Int(*v),
            Value::ShortStr(packed) => Key::Str(
                std::str::from_utf8(&packed[..usize::from(packed[SHORT])])
                    .expect("checked as UTF-8 when it joined"),
            ),
            Value::Str(s) => Key::Str(s),
            Value::Bytes(b) => Key::Bytes(b),
            Value::Object(t) => Key::Object(*t),
        }
    }
}

impl Key<'_> {
    /// Rank of the type in the sorted view: booleans, integers, strings, bytes, objects.
    pub fn type_rank(&self) -> u8 {
        match self {
            Key::Bool(_) => 0,
            Key::Int(_) => 1,
            Key::Str(_) => 2,
            Key::Bytes(_) => 3,
            Key::Object(_) => 4,
        }
    }
}

/// Whether a validity bitmap holds the bits `bit_offset .. bit_offset + n` (sums that
/// would overflow do not).
fn bitmap_covers(bitmap: &[u8], bit_offset: usize, n: usize) -> bool {
    let bits = (bitmap.len() as u128) * 8;
    bits >= bit_offset as u128 + n as u128
}

/// A value to look up, borrowed from the input (no allocation unless it is new).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key<'a> {
    Bool(bool),
    Int(i64),
    Str(&'a str),
    Bytes(&'a [u8]),
    Object(u64),
}

/// The vocabulary of one feature.
#[derive(Debug, Clone, Default)]
pub struct FeatureVocabulary {
    /// The values in insertion order: code k is `values[k]`.
    values: Vec<Value>,
    bools: [Option<u32>; 2],
    ints: FxHashMap<i64, u32>,
    /// Strings of at most `SHORT` bytes, packed into one integer (no pointer to follow
    /// on a lookup: most categorical strings are short codes and IDs).
    short_strs: FxHashMap<u128, u32>,
    /// Strings of at most [`TINY`] bytes (most IDs and codes), packed into a `u64`: a
    /// table of half the entry size, which matters as each lookup of a large vocabulary
    /// is a cache miss.
    tiny_strs: FxHashMap<u64, u32>,
    strs: FxHashMap<Box<str>, u32>,
    bytes: FxHashMap<Box<[u8]>, u32>,
    objects: FxHashMap<u64, u32>,
}

/// Longest string kept packed in a `u128`: its bytes, then its length in the last byte.
const SHORT: usize = 15;

/// Longest string kept packed in a `u64` (its bytes, then its length in the last byte).
const TINY: usize = 7;

/// The `u64` key of a packed string of at most [`TINY`] bytes (None for a longer one):
/// its low bytes are the string (the rest zero), so the length goes in the top byte.
#[inline]
fn tiny_key(packed: u128) -> Option<u64> {
    let len = (packed >> (8 * SHORT)) as u64;
    (len as usize <= TINY).then_some(packed as u64 | (len << (8 * TINY)))
}

/// Bytes of one Arrow string view, and the longest string a view holds inline.
const VIEW: usize = 16;
const INLINE_VIEW: usize = 12;

/// A string of at most `SHORT` bytes packed into an integer (distinct strings give
/// distinct integers: the length is part of it).
#[inline]
fn pack(s: &str) -> Option<u128> {
    let bytes = s.as_bytes();
    (bytes.len() <= SHORT).then(|| pack_bytes(bytes))
}

/// Most categories one feature may hold: codes are `i32`.
pub const MAX_CATEGORIES: usize = i32::MAX as usize;

impl FeatureVocabulary {
    /// Number of categories.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no category is known.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The values in insertion order (code k is the k-th).
    pub fn values(&self) -> impl ExactSizeIterator<Item = Key<'_>> + '_ {
        self.values.iter().map(Value::key)
    }

    /// The code of `key`, if known.
    pub fn get(&self, key: Key<'_>) -> Option<u32> {
        match key {
            Key::Bool(b) => self.bools[b as usize],
            Key::Int(v) => self.ints.get(&v).copied(),
            Key::Str(s) => match pack(s) {
                Some(packed) => self.get_packed(packed),
                None => self.strs.get(s).copied(),
            },
            Key::Bytes(b) => self.bytes.get(b).copied(),
            Key::Object(t) => self.objects.get(&t).copied(),
        }
    }

    /// The code of `key`, adding it at the end when it is new.
    ///
    /// # Errors
    /// More than [`MAX_CATEGORIES`] categories, or no memory for the new one.
    pub fn insert(&mut self, key: Key<'_>) -> Result<u32> {
        if let Some(code) = self.get(key) {
            return Ok(code);
        }
        self.insert_new(key)
    }

    /// Room for `additional` more strings without rehashing (categories about to join).
    ///
    /// # Errors
    /// No memory for them.
    pub fn reserve_strings(&mut self, additional: usize) -> Result<()> {
        self.values
            .try_reserve(additional)
            .map_err(|_| allocation_error(self.values.len() + additional))?;
        self.short_strs
            .try_reserve(additional)
            .and_then(|()| self.tiny_strs.try_reserve(additional))
            .map_err(|_| allocation_error(self.values.len() + additional))
    }

    /// The code of a packed short string ([`pack`]), if known (inlined: it is the whole
    /// per-cell work of coding known strings).
    #[inline(always)]
    fn get_packed(&self, packed: u128) -> Option<u32> {
        match tiny_key(packed) {
            Some(key) => self.tiny_strs.get(&key).copied(),
            None => self.short_strs.get(&packed).copied(),
        }
    }

    /// [`FeatureVocabulary::insert`] of a key known not to be in the vocabulary.
    fn insert_new(&mut self, key: Key<'_>) -> Result<u32> {
        if self.values.len() >= MAX_CATEGORIES {
            return Err(HebError::InvalidParameter(format!(
                "a feature has more than {MAX_CATEGORIES} categories"
            )));
        }
        let grown = self.values.len() + 1;
        self.values
            .try_reserve(1)
            .map_err(|_| allocation_error(grown))?;
        // room in the value's map too: a map that cannot grow must be an error, never
        // an abort of the process
        let room = match key {
            Key::Bool(_) => Ok(()),
            Key::Int(_) => self.ints.try_reserve(1),
            Key::Str(s) => match pack(s).map(tiny_key) {
                Some(Some(_)) => self.tiny_strs.try_reserve(1),
                Some(None) => self.short_strs.try_reserve(1),
                None => self.strs.try_reserve(1),
            },
            Key::Bytes(_) => self.bytes.try_reserve(1),
            Key::Object(_) => self.objects.try_reserve(1),
        };
        room.map_err(|_| HebError::Allocation {
            what: "the categories of a feature",
            // a map entry and a value per category, about
            bytes: grown as u128 * 48,
        })?;
        let code = self.values.len() as u32;
        let value = match key {
            Key::Bool(b) => {
                self.bools[b as usize] = Some(code);
                Value::Bool(b)
            }
            Key::Int(v) => {
                self.ints.insert(v, code);
                Value::Int(v)
            }
            Key::Str(s) => match pack(s) {
                Some(packed) => {
                    match tiny_key(packed) {
                        Some(key) => self.tiny_strs.insert(key, code),
                        None => self.short_strs.insert(packed, code),
                    };
                    Value::ShortStr(packed.to_le_bytes())
                }
                None => {
                    self.strs.insert(s.into(), code);
                    Value::Str(s.into())
                }
            },
            Key::Bytes(b) => {
                self.bytes.insert(b.into(), code);
                Value::Bytes(b.into())
            }
            Key::Object(t) => {
                self.objects.insert(t, code);
                Value::Object(t)
            }
        };
        self.values.push(value);
        Ok(code)
    }

    /// The code of `text` if it is a known string of at most `SHORT` bytes (the common
    /// cell of a column being scored): no error path, so the caller's loop stays in
    /// registers; None sends it the general way ([`Coding::code_str`]).
    #[inline(always)]
    pub fn known_short_str(&self, text: &str) -> Option<u32> {
        pack(text).and_then(|packed| self.get_packed(packed))
    }

    /// Forgets every category from code `len` on (undoes the growth of a failed batch).
    pub fn truncate(&mut self, len: usize) {
        while self.values.len() > len {
            match self.values.pop().expect("len > 0") {
                Value::Bool(b) => self.bools[b as usize] = None,
                Value::Int(v) => {
                    self.ints.remove(&v);
                }
                Value::ShortStr(packed) => {
                    let packed = u128::from_le_bytes(packed);
                    match tiny_key(packed) {
                        Some(key) => self.tiny_strs.remove(&key),
                        None => self.short_strs.remove(&packed),
                    };
                }
                Value::Str(s) => {
                    self.strs.remove(&s);
                }
                Value::Bytes(b) => {
                    self.bytes.remove(&b);
                }
                Value::Object(t) => {
                    self.objects.remove(&t);
                }
            }
        }
    }

    /// The codes in sorted order of their values: by type (booleans, integers, strings,
    /// bytes, objects), then by value (strings by code point, objects by token).
    pub fn sorted_order(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.values.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            let (a, b) = (self.values[a as usize].key(), self.values[b as usize].key());
            a.type_rank()
                .cmp(&b.type_rank())
                .then_with(|| match (a, b) {
                    (Key::Bool(x), Key::Bool(y)) => x.cmp(&y),
                    (Key::Int(x), Key::Int(y)) => x.cmp(&y),
                    // UTF-8 byte order is code point order
                    (Key::Str(x), Key::Str(y)) => x.cmp(y),
                    (Key::Bytes(x), Key::Bytes(y)) => x.cmp(y),
                    (Key::Object(x), Key::Object(y)) => x.cmp(&y),
                    _ => std::cmp::Ordering::Equal,
                })
        });
        order
    }
}

/// How a coding pass meets its vocabulary: growing it (fitting: a value not yet known joins
/// with the next code) or only reading it (scoring: such a value codes as [`UNKNOWN`]).
/// Reading needs only a shared reference, so any number of threads can score with one
/// vocabulary at once.
pub trait Access {
    /// The vocabulary coded against.
    fn vocabulary(&self) -> &FeatureVocabulary;

    /// Whether values not yet known join.
    fn grows(&self) -> bool;

    /// The coded cell of a value not in the vocabulary: its new code, or [`UNKNOWN`].
    ///
    /// # Errors
    /// As [`FeatureVocabulary::insert`].
    fn unseen(&mut self, key: Key<'_>) -> Result<i32>;

    /// Room for `additional` more strings about to join (nothing to do when reading).
    ///
    /// # Errors
    /// No memory for them.
    fn reserve_strings(&mut self, additional: usize) -> Result<()>;
}

impl Access for &mut FeatureVocabulary {
    #[inline(always)]
    fn vocabulary(&self) -> &FeatureVocabulary {
        self
    }

    #[inline(always)]
    fn grows(&self) -> bool {
        true
    }

    fn unseen(&mut self, key: Key<'_>) -> Result<i32> {
        Ok(self.insert_new(key)? as i32)
    }

    fn reserve_strings(&mut self, additional: usize) -> Result<()> {
        FeatureVocabulary::reserve_strings(self, additional)
    }
}

impl Access for &FeatureVocabulary {
    #[inline(always)]
    fn vocabulary(&self) -> &FeatureVocabulary {
        self
    }

    #[inline(always)]
    fn grows(&self) -> bool {
        false
    }

    fn unseen(&mut self, _key: Key<'_>) -> Result<i32> {
        Ok(UNKNOWN)
    }

    fn reserve_strings(&mut self, _additional: usize) -> Result<()> {
        Ok(())
    }
}

/// Cells coded against one feature's vocabulary: `Coding(&mut vocabulary)` grows it,
/// `Coding(&vocabulary)` only reads it ([`Access`]).
pub struct Coding<A>(pub A);

impl<A: Access> Coding<A> {
    /// The vocabulary coded against.
    #[inline(always)]
    fn vocabulary(&self) -> &FeatureVocabulary {
        self.0.vocabulary()
    }

    /// The code of `key` as a coded cell: its code, the new code when growing, else
    /// [`UNKNOWN`].
    ///
    /// # Errors
    /// As [`FeatureVocabulary::insert`].
    #[inline]
    pub fn code(&mut self, key: Key<'_>) -> Result<i32> {
        match self.vocabulary().get(key) {
            Some(code) => Ok(code as i32),
            None => self.0.unseen(key),
        }
    }

    /// [`Coding::code`] of a string, the common cell of an object column, with
    /// the lookup of a known short string inlined into the caller's loop.
    ///
    /// # Errors
    /// As [`FeatureVocabulary::insert`].
    #[inline]
    pub fn code_str(&mut self, text: &str) -> Result<i32> {
        let known = match pack(text) {
            Some(packed) => self.vocabulary().get_packed(packed),
            None => self.vocabulary().strs.get(text).copied(),
        };
        match known {
            Some(code) => Ok(code as i32),
            None => self.0.unseen(Key::Str(text)),
        }
    }

    /// Codes integers, `missing[s]` marking missing cells.
    ///
    /// # Errors
    /// A mask of the wrong length; as [`FeatureVocabulary::insert`].
    pub fn encode_ints(
        &mut self,
        values: impl ExactSizeIterator<Item = i64>,
        missing: Option<&[bool]>,
    ) -> Result<Vec<i32>> {
        let n = values.len();
        if let Some(mask) = missing {
            crate::error::check_len("missing-value mask", n, mask.len())?;
        }
        let mut codes = codes_buffer(n)?;
        for (s, v) in values.enumerate() {
            codes.push(if missing.is_some_and(|m| m[s]) {
                MISSING
            } else {
                self.code(Key::Int(v))?
            });
        }
        Ok(codes)
    }

    /// Codes an Arrow string array from its buffers: `offsets` (length + 1 entries, from
    /// the array's offset on), `data`, and the validity bitmap with its bit offset.
    ///
    /// # Errors
    /// Offsets outside `data` or decreasing, text that is not UTF-8 (`name` is the
    /// feature in the message); as [`FeatureVocabulary::insert`].
    pub fn encode_utf8<O: Copy + TryInto<usize>>(
        &mut self,
        offsets: &[O],
        data: &[u8],
        validity: Option<(&[u8], usize)>,
        positions: Option<&[i64]>,
        name: &str,
    ) -> Result<Vec<i32>> {
        let n = offsets.len().saturating_sub(1);
        if let Some(positions) = positions {
            if positions.iter().any(|&k| !(0..n as i64).contains(&k)) {
                return Err(HebError::InvalidParameter(format!(
                    "{name}: a position outside the {n} strings"
                )));
            }
        }
        if let Some((bitmap, bit_offset)) = validity {
            if !bitmap_covers(bitmap, bit_offset, n) {
                return Err(HebError::InvalidParameter(format!(
                    "{name}: validity bitmap shorter than the array"
                )));
            }
        }
        match positions {
            Some(positions) => {
                if self.0.grows() {
                    // the categories of a dictionary or pandas category column, all new
                    // on a first fit
                    self.0.reserve_strings(positions.len())?;
                }
                self.encode_utf8_rows(
                    offsets,
                    data,
                    validity,
                    positions.iter().map(|&k| k as usize),
                    name,
                )
            }
            None => self.encode_utf8_rows(offsets, data, validity, 0..n, name),
        }
    }

    /// [`Coding::encode_utf8`] of the strings `rows` (checked to be in range).
    fn encode_utf8_rows<O: Copy + TryInto<usize>>(
        &mut self,
        offsets: &[O],
        data: &[u8],
        validity: Option<(&[u8], usize)>,
        rows: impl ExactSizeIterator<Item = usize>,
        name: &str,
    ) -> Result<Vec<i32>> {
        let mut codes = codes_buffer(rows.len())?;
        let bad =
            || HebError::InvalidParameter(format!("{name}: Arrow string offsets out of range"));
        for s in rows {
            if let Some((bitmap, bit_offset)) = validity {
                let bit = bit_offset + s;
                if bitmap[bit / 8] & (1 << (bit % 8)) == 0 {
                    codes.push(MISSING);
                    continue;
                }
            }
            let start: usize = offsets[s].try_into().map_err(|_| bad())?;
            let end: usize = offsets[s + 1].try_into().map_err(|_| bad())?;
            let bytes = data.get(start..end).ok_or_else(bad)?;
            codes.push(self.code_utf8(bytes, data.get(start..start + 16), name)?);
        }
        Ok(codes)
    }

    /// Codes an Arrow string_view array from its buffers: `views` (16 bytes a string,
    /// from the array's offset on: the length, then the string itself when it fits in 12
    /// bytes, else a 4-byte prefix, the index of its data buffer and its offset there),
    /// the variadic data `buffers`, and the validity bitmap with its bit offset; only the
    /// strings at `positions`, in that order, when given.
    ///
    /// # Errors
    /// A views buffer that is not whole views, a negative length, a buffer index or
    /// range outside the buffers, text that is not UTF-8; as
    /// [`FeatureVocabulary::insert`].
    pub fn encode_utf8_views(
        &mut self,
        views: &[u8],
        buffers: &[&[u8]],
        validity: Option<(&[u8], usize)>,
        positions: Option<&[i64]>,
        name: &str,
    ) -> Result<Vec<i32>> {
        let bad =
            |why: &str| HebError::InvalidParameter(format!("{name}: Arrow string views {why}"));
        if views.len() % VIEW != 0 {
            return Err(bad("are not whole 16-byte views"));
        }
        let n = views.len() / VIEW;
        if let Some((bitmap, bit_offset)) = validity {
            if !bitmap_covers(bitmap, bit_offset, n) {
                return Err(bad("have a validity bitmap shorter than the array"));
            }
        }
        if let Some(positions) = positions {
            if positions.iter().any(|&k| !(0..n as i64).contains(&k)) {
                return Err(bad("are chosen at a position outside the array"));
            }
        }
        let count = positions.map_or(n, <[i64]>::len);
        let mut codes = codes_buffer(count)?;
        let field = |view: &[u8], at: usize| {
            i32::from_le_bytes(view[at..at + 4].try_into().expect("4 bytes"))
        };
        for k in 0..count {
            let s = positions.map_or(k, |p| p[k] as usize);
            if let Some((bitmap, bit_offset)) = validity {
                let bit = bit_offset + s;
                if bitmap[bit / 8] & (1 << (bit % 8)) == 0 {
                    codes.push(MISSING);
                    continue;
                }
            }
            let view = &views[VIEW * s..VIEW * (s + 1)];
            let len = usize::try_from(field(view, 0)).map_err(|_| bad("hold a negative length"))?;
            let code = if len <= INLINE_VIEW {
                self.code_utf8(&view[4..4 + len], None, name)?
            } else {
                let buffer = usize::try_from(field(view, 8))
                    .ok()
                    .and_then(|b| buffers.get(b))
                    .ok_or_else(|| bad("point outside their data buffers"))?;
                let start = usize::try_from(field(view, 12))
                    .map_err(|_| bad("point outside their data buffers"))?;
                let bytes = start
                    .checked_add(len)
                    .and_then(|end| buffer.get(start..end))
                    .ok_or_else(|| bad("point outside their data buffers"))?;
                self.code_utf8(bytes, buffer.get(start..start + 16), name)?
            };
            codes.push(code);
        }
        Ok(codes)
    }

    /// The coded cell of one string given as bytes (see [`Coding::code`]);
    /// `window`, when the buffer holds 16 bytes from the string's start, lets a short
    /// string be packed with one unaligned load instead of a copy.
    ///
    /// A short string is looked up by its packed bytes without checking them: a known
    /// value was checked as UTF-8 when it joined, and equal bytes are that same text.
    /// Only a new or long string is checked.
    ///
    /// # Errors
    /// Bytes that are not UTF-8; as [`FeatureVocabulary::insert`].
    #[inline]
    pub fn code_utf8(&mut self, bytes: &[u8], window: Option<&[u8]>, name: &str) -> Result<i32> {
        let not_utf8 =
            || HebError::InvalidParameter(format!("{name} holds text that is not UTF-8"));
        if bytes.len() <= SHORT {
            let packed = match window {
                Some(window) => pack_window(window, bytes.len()),
                None => pack_bytes(bytes),
            };
            if let Some(code) = self.vocabulary().get_packed(packed) {
                return Ok(code as i32);
            }
            if !self.0.grows() {
                return Ok(UNKNOWN);
            }
            let text = std::str::from_utf8(bytes).map_err(|_| not_utf8())?;
            return self.0.unseen(Key::Str(text));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| not_utf8())?;
        self.code(Key::Str(text))
    }

    /// Codes an Arrow array read through the C data interface
    /// ([`crate::arrow_columns`]). A dictionary column is coded through its dictionary:
    /// growing, the dictionary values the rows use join in order of first use (as the
    /// values themselves would, one row at a time); scoring fewer rows than the
    /// dictionary holds, the rows' values are coded instead of the whole dictionary.
    ///
    /// # Errors
    /// An index outside the dictionary, a dictionary of dictionaries, an unsigned 64-bit
    /// value beyond int64 (the caller checks [`ArrowColumn::fits_int64`] first); as
    /// [`Coding::encode_utf8`].
    pub fn encode_arrow(&mut self, column: &ArrowColumn<'_>, name: &str) -> Result<Vec<i32>> {
        let ArrowColumn::Dictionary {
            indices,
            validity,
            dictionary,
        } = column
        else {
            return self.encode_arrow_rows(column, None, name);
        };
        let (n, k) = (indices.len(), dictionary.len());
        // the dictionary index of every row, -1 where the row is missing
        let mut rows = Vec::new();
        rows.try_reserve_exact(n).map_err(|_| allocation_error(n))?;
        for s in 0..n {
            rows.push(if is_missing(*validity, s) {
                -1
            } else {
                let index = indices.get(s);
                if !(0..k as i128).contains(&index) {
                    return Err(HebError::InvalidParameter(format!(
                        "{name}: dictionary index {index} outside the {k} dictionary values"
                    )));
                }
                index as i64
            });
        }
        let mapped = if !self.0.grows() && n < k {
            // a few rows: their values, not the whole dictionary
            let positions: Vec<i64> = rows.iter().map(|&r| r.max(0)).collect();
            let mut codes = self.encode_arrow_rows(dictionary, Some(&positions), name)?;
            for (code, &r) in codes.iter_mut().zip(&rows) {
                if r < 0 {
                    *code = MISSING;
                }
            }
            return Ok(codes);
        } else if self.0.grows() {
            let order = first_appearance(&rows, k)?;
            let mut mapped = vec![UNKNOWN; k];
            let coded = self.encode_arrow_rows(dictionary, Some(&order), name)?;
            for (&index, code) in order.iter().zip(coded) {
                mapped[index as usize] = code;
            }
            mapped
        } else {
            self.encode_arrow_rows(dictionary, None, name)?
        };
        let mut codes = codes_buffer(n)?;
        codes.extend(
            rows.iter()
                .map(|&r| if r < 0 { MISSING } else { mapped[r as usize] }),
        );
        Ok(codes)
    }

    /// Codes the values of a column that is not a dictionary (only those at
    /// `positions`, in that order, when given).
    fn encode_arrow_rows(
        &mut self,
        column: &ArrowColumn<'_>,
        positions: Option<&[i64]>,
        name: &str,
    ) -> Result<Vec<i32>> {
        let n = column.len();
        let count = positions.map_or(n, <[i64]>::len);
        let row = |k: usize| -> Result<usize> {
            match positions {
                None => Ok(k),
                Some(p) => usize::try_from(p[k])
                    .ok()
                    .filter(|&s| s < n)
                    .ok_or_else(|| {
                        HebError::InvalidParameter(format!("{name}: a position outside the array"))
                    }),
            }
        };
        match column {
            ArrowColumn::Utf8 {
                offsets,
                data,
                validity,
            } => match offsets {
                Offsets::Small(o) => self.encode_utf8(o, data, *validity, positions, name),
                Offsets::Large(o) => self.encode_utf8(o, data, *validity, positions, name),
            },
            ArrowColumn::Views {
                views,
                buffers,
                validity,
            } => self.encode_utf8_views(views, buffers, *validity, positions, name),
            ArrowColumn::Integers { values, validity } => {
                self.code_each(count, row, *validity, |s| {
                    i64::try_from(values.get(s)).map(Key::Int).map_err(|_| {
                        HebError::InvalidParameter(format!(
                            "{name}: an unsigned integer beyond int64"
                        ))
                    })
                })
            }
            ArrowColumn::Booleans {
                bits,
                bit_offset,
                validity,
                ..
            } => self.code_each(count, row, *validity, |s| {
                let bit = bit_offset + s;
                Ok(Key::Bool(bits[bit / 8] & (1 << (bit % 8)) != 0))
            }),
            ArrowColumn::Null { .. } => {
                for k in 0..count {
                    row(k)?;
                }
                let mut codes = codes_buffer(count)?;
                codes.resize(count, MISSING);
                Ok(codes)
            }
            ArrowColumn::Dictionary { .. } => Err(HebError::InvalidParameter(format!(
                "{name}: a dictionary whose values are a dictionary"
            ))),
        }
    }

    /// Codes `count` values one by one: value `row(k)` is missing by `validity` or is
    /// `key(row(k))`.
    fn code_each<'k>(
        &mut self,
        count: usize,
        row: impl Fn(usize) -> Result<usize>,
        validity: Validity<'_>,
        key: impl Fn(usize) -> Result<Key<'k>>,
    ) -> Result<Vec<i32>> {
        let mut codes = codes_buffer(count)?;
        for k in 0..count {
            let s = row(k)?;
            codes.push(if is_missing(validity, s) {
                MISSING
            } else {
                self.code(key(s)?)?
            });
        }
        Ok(codes)
    }
}

/// Whether value `s` is missing by a validity bitmap.
#[inline]
fn is_missing(validity: Validity<'_>, s: usize) -> bool {
    validity.is_some_and(|(bitmap, first)| {
        let bit = first + s;
        bitmap[bit / 8] & (1 << (bit % 8)) == 0
    })
}

/// The distinct values of `codes` (each in `-1..n`, -1 missing and skipped) in order of
/// first appearance: the order in which a category column's categories join the
/// vocabulary, as its values would one row at a time.
///
/// # Errors
/// A code outside `-1..n`.
pub fn first_appearance(codes: &[i64], n: usize) -> Result<Vec<i64>> {
    let mut seen = Vec::new();
    seen.try_reserve_exact(n).map_err(|_| allocation_error(n))?;
    seen.resize(n, false);
    let mut order = Vec::new();
    for &code in codes {
        if code == -1 {
            continue;
        }
        let k = usize::try_from(code)
            .ok()
            .filter(|&k| k < n)
            .ok_or_else(|| {
                HebError::InvalidParameter(format!("category code {code} outside -1..{n}"))
            })?;
        if !seen[k] {
            seen[k] = true;
            order.push(code);
        }
    }
    Ok(order)
}

/// [`pack`] of the first `len` (at most `SHORT`) bytes of a 16-byte window: one load,
/// a mask, the length in the last byte.
#[inline]
fn pack_window(window: &[u8], len: usize) -> u128 {
    let mut word = [0_u8; 16];
    word.copy_from_slice(&window[..16]);
    let word = u128::from_le_bytes(word);
    let mask = if len == 0 {
        0
    } else {
        u128::MAX >> (8 * (16 - len))
    };
    (word & mask) | ((len as u128) << (8 * SHORT))
}

/// [`pack`] of at most `SHORT` bytes, by (overlapping) word loads rather than a copy
/// through the stack, which would stall the load that reads the copy back.
#[inline]
fn pack_bytes(bytes: &[u8]) -> u128 {
    let n = bytes.len();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(
            bytes[at..at + 4].try_into().expect("4 bytes"),
        ))
    };
    let (lo, hi) = if n > 8 {
        // bytes 8..n are the top n - 8 bytes of the last word
        (word(0), word(n - 8) >> (8 * (16 - n)))
    } else if n == 8 {
        (word(0), 0)
    } else if n >= 4 {
        (half(0) | (half(n - 4) << (8 * (n - 4))), 0)
    } else if n > 0 {
        let byte = |i: usize| u64::from(bytes[i]) << (8 * i);
        (byte(0) | byte(n / 2) | byte(n - 1), 0)
    } else {
        (0, 0)
    };
    u128::from(lo) | (u128::from(hi) << 64) | ((n as u128) << (8 * SHORT))
}

fn allocation_error(n: usize) -> HebError {
    HebError::Allocation {
        what: "category codes",
        bytes: (n as u128) * 4,
    }
}

/// An empty code vector with room for `n` codes, or [`HebError::Allocation`].
pub fn codes_buffer(n: usize) -> Result<Vec<i32>> {
    let mut codes = Vec::new();
    codes
        .try_reserve_exact(n)
        .map_err(|_| allocation_error(n))?;
    Ok(codes)
}

/// The vocabularies of all features, and the format version of their saved state.
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    pub features: Vec<FeatureVocabulary>,
}

/// Version of the saved state ([`FeatureVocabulary::to_parts`]); loading another refuses.
pub const FORMAT_VERSION: u32 = 1;

/// One feature's values split by type, as saved: `kinds[k]` is the type of code k
/// (0 bool, 1 int, 2 str, 3 bytes, 4 object) and its value is the next unread one of
/// that type's array (`ints` holds booleans as 0/1 and object tokens too; strings and
/// bytes are concatenated with `offsets`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeatureParts {
    pub kinds: Vec<u8>,
    pub ints: Vec<i64>,
    pub text: Vec<u8>,
    pub text_offsets: Vec<u64>,
}

impl FeatureVocabulary {
    /// The values as flat arrays (for pickling).
    pub fn to_parts(&self) -> FeatureParts {
        let mut parts = FeatureParts {
            text_offsets: vec![0],
            ..FeatureParts::default()
        };
        for key in self.values() {
            parts.kinds.push(key.type_rank());
            match key {
                Key::Bool(b) => parts.ints.push(b as i64),
                Key::Int(v) => parts.ints.push(v),
                Key::Object(t) => parts.ints.push(t as i64),
                Key::Str(s) => {
                    parts.text.extend_from_slice(s.as_bytes());
                    parts.text_offsets.push(parts.text.len() as u64);
                }
                Key::Bytes(b) => {
                    parts.text.extend_from_slice(b);
                    parts.text_offsets.push(parts.text.len() as u64);
                }
            }
        }
        parts
    }

    /// The vocabulary whose saved values are `parts`.
    ///
    /// # Errors
    /// Parts that do not describe a vocabulary (unknown kind, arrays too short, text that
    /// is not UTF-8, a value twice).
    pub fn from_parts(parts: &FeatureParts) -> Result<Self> {
        let corrupt = |why: &str| HebError::InvalidParameter(format!("corrupt vocabulary: {why}"));
        let mut vocabulary = FeatureVocabulary::default();
        let (mut next_int, mut next_text) = (parts.ints.iter(), parts.text_offsets.windows(2));
        for &kind in &parts.kinds {
            let key = match kind {
                0 | 1 | 4 => {
                    let v = *next_int.next().ok_or_else(|| corrupt("too few integers"))?;
                    match kind {
                        0 => Key::Bool(v != 0),
                        1 => Key::Int(v),
                        _ => Key::Object(v as u64),
                    }
                }
                2 | 3 => {
                    let w = next_text.next().ok_or_else(|| corrupt("too few strings"))?;
                    let bytes = parts
                        .text
                        .get(w[0] as usize..w[1] as usize)
                        .ok_or_else(|| corrupt("string offsets"))?;
                    if kind == 2 {
                        Key::Str(std::str::from_utf8(bytes).map_err(|_| corrupt("not UTF-8"))?)
                    } else {
                        Key::Bytes(bytes)
                    }
                }
                _ => return Err(corrupt("unknown value type")),
            };
            let before = vocabulary.len();
            if vocabulary.insert(key)? as usize != before {
                return Err(corrupt("a value appears twice"));
            }
        }
        Ok(vocabulary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_first_appearance_and_types_stay_apart() {
        let mut v = FeatureVocabulary::default();
        assert_eq!(Coding(&mut v).code(Key::Str("b")).unwrap(), 0);
        assert_eq!(Coding(&mut v).code(Key::Int(1)).unwrap(), 1);
        assert_eq!(Coding(&mut v).code(Key::Str("1")).unwrap(), 2);
        assert_eq!(Coding(&mut v).code(Key::Bool(true)).unwrap(), 3);
        assert_eq!(Coding(&mut v).code(Key::Bytes(b"1")).unwrap(), 4);
        assert_eq!(Coding(&mut v).code(Key::Str("b")).unwrap(), 0);
        assert_eq!(Coding(&v).code(Key::Str("zz")).unwrap(), UNKNOWN);
        assert_eq!(v.len(), 5);
        // bool, int, str, bytes
        assert_eq!(v.sorted_order(), vec![3, 1, 2, 0, 4]);
    }

    #[test]
    fn a_window_packs_as_a_copy_does() {
        let buffer = b"abcdefghijklmnopqrstuvwxyz0123456789";
        for start in 0..4 {
            for len in 0..=SHORT {
                let bytes = &buffer[start..start + len];
                let window = &buffer[start..start + 16];
                assert_eq!(pack_window(window, len), pack_bytes(bytes), "{start} {len}");
            }
        }
        let mut v = FeatureVocabulary::default();
        let data = b"ab\xffcd__________________";
        assert_eq!(
            Coding(&mut v)
                .code_utf8(b"ab", Some(&data[..16]), "f")
                .unwrap(),
            0
        );
        assert_eq!(Coding(&mut v).code_utf8(b"ab", None, "f").unwrap(), 0);
        assert!(Coding(&mut v)
            .code_utf8(&data[..3], Some(&data[..16]), "f")
            .is_err());
        assert_eq!(
            Coding(&v)
                .code_utf8(&data[..3], Some(&data[..16]), "f")
                .unwrap(),
            UNKNOWN
        );
        assert_eq!(v.len(), 1);
    }

    #[test]
    fn categories_join_in_order_of_first_use() {
        assert_eq!(
            first_appearance(&[2, -1, 0, 2, 1, 0], 4).unwrap(),
            vec![2, 0, 1]
        );
        assert!(first_appearance(&[4], 4).is_err());
        assert!(first_appearance(&[-2], 4).is_err());
    }

    #[test]
    fn short_and_long_strings_are_told_apart() {
        let mut v = FeatureVocabulary::default();
        let long = "0123456789abcdef"; // 16 bytes: kept unpacked
        let texts = [
            "",
            "\0",
            "\0\0",
            "a",
            "a\0",
            "0123456789abcde",
            long,
            "abcdefg",
            "abcdefg\0",
        ];
        for s in texts {
            let before = v.len();
            assert_eq!(v.insert(Key::Str(s)).unwrap() as usize, before, "{s:?}");
        }
        assert_eq!(v.get(Key::Str("a\0")), Some(4));
        assert_eq!(v.get(Key::Str(long)), Some(6));
        // packed (no allocation) or not, each value reads back as the text it was
        let read_back: Vec<Key<'_>> = v.values().collect();
        // 7 bytes (the u64 table) and 8 (the u128 one) are told apart
        assert_eq!(v.get(Key::Str("abcdefg")), Some(7));
        assert_eq!(v.get(Key::Str("abcdefg\0")), Some(8));
        assert_eq!(read_back, texts.map(Key::Str).to_vec());
        let mut w = FeatureVocabulary::default();
        for s in ["é", "\u{1F600}\u{1F600}\u{1F600}x", "ab\u{0}cd"] {
            w.insert(Key::Str(s)).unwrap();
        }
        assert!(w
            .values()
            .eq(["é", "\u{1F600}\u{1F600}\u{1F600}x", "ab\u{0}cd"].map(Key::Str)));
        assert_eq!(v.get(Key::Str("0123456789abcdeF")), None);
        v.truncate(1);
        assert_eq!(v.get(Key::Str("a")), None);
        assert_eq!(v.get(Key::Str(long)), None);
        assert_eq!(v.get(Key::Str("")), Some(0));
    }

    #[test]
    fn truncate_forgets_the_newest_values() {
        let mut v = FeatureVocabulary::default();
        for s in ["x", "y", "z"] {
            v.insert(Key::Str(s)).unwrap();
        }
        v.insert(Key::Int(7)).unwrap();
        v.truncate(2);
        assert_eq!(v.get(Key::Str("z")), None);
        assert_eq!(v.get(Key::Int(7)), None);
        assert_eq!(v.get(Key::Str("y")), Some(1));
        assert_eq!(v.insert(Key::Str("z")).unwrap(), 2);
    }

    #[test]
    fn arrow_strings_with_validity() {
        let mut v = FeatureVocabulary::default();
        let data = "éab\u{1F600}ab".as_bytes();
        // "é", "ab", null, "😀", "ab", "" (empty)
        let offsets: Vec<i32> = vec![0, 2, 4, 4, 8, 10, 10];
        let validity = [0b0011_1011_u8];
        let codes = Coding(&mut v)
            .encode_utf8(&offsets, data, Some((&validity, 0)), None, "feature 0")
            .unwrap();
        assert_eq!(codes, vec![0, 1, MISSING, 2, 1, 3]);
        assert_eq!(v.get(Key::Str("")), Some(3));
        let bad: Vec<i32> = vec![0, 20];
        assert!(Coding(&mut v)
            .encode_utf8(&bad, data, None, None, "f")
            .is_err());
        let not_utf8 = [0xff_u8];
        assert!(Coding(&mut v)
            .encode_utf8(&[0_i64, 1], &not_utf8, None, None, "f")
            .is_err());
        // chosen positions, in the order given: "😀" joins before "é" would have
        let mut w = FeatureVocabulary::default();
        let chosen = [3_i64, 2, 0, 3];
        let codes = Coding(&mut w)
            .encode_utf8(&offsets, data, Some((&validity, 0)), Some(&chosen), "f")
            .unwrap();
        assert_eq!(codes, vec![0, MISSING, 1, 0]);
        assert_eq!(w.get(Key::Str("\u{1F600}")), Some(0));
        assert!(Coding(&mut w)
            .encode_utf8(&offsets, data, None, Some(&[6]), "f")
            .is_err());
    }

    /// One string view: inline when at most 12 bytes, else (prefix, buffer, offset).
    fn view(text: &[u8], buffer: i32, offset: i32) -> Vec<u8> {
        let mut v = (text.len() as i32).to_le_bytes().to_vec();
        if text.len() <= 12 {
            v.extend_from_slice(text);
            v.resize(16, 0);
        } else {
            v.extend_from_slice(&text[..4]);
            v.extend_from_slice(&buffer.to_le_bytes());
            v.extend_from_slice(&offset.to_le_bytes());
        }
        v
    }

    #[test]
    fn arrow_string_views_inline_and_in_buffers() {
        let long = "a string of more than twelve bytes".as_bytes();
        let other = "another long string, é included".as_bytes();
        let mut second = b"xx".to_vec();
        second.extend_from_slice(other);
        let buffers: Vec<&[u8]> = vec![long, &second];
        let mut views = Vec::new();
        for v in [
            view(b"short", 0, 0),
            view(long, 0, 0),
            view(b"", 0, 0),
            view(other, 1, 2),
            view(b"short", 0, 0),
            view(b"null", 0, 0),
        ] {
            views.extend(v);
        }
        let validity = [0b0001_1111_u8];
        let mut v = FeatureVocabulary::default();
        let codes = Coding(&mut v)
            .encode_utf8_views(&views, &buffers, Some((&validity, 0)), None, "f")
            .unwrap();
        assert_eq!(codes, vec![0, 1, 2, 3, 0, MISSING]);
        assert_eq!(v.get(Key::Str("another long string, é included")), Some(3));
        assert_eq!(
            v.get(Key::Str("a string of more than twelve bytes")),
            Some(1)
        );
        // the same strings from offsets and data code alike
        let chosen = [3_i64, 0];
        let picked = Coding(&v)
            .encode_utf8_views(&views, &buffers, None, Some(&chosen), "f")
            .unwrap();
        assert_eq!(picked, vec![3, 0]);
        // broken views are errors, never a panic
        let mut w = FeatureVocabulary::default();
        assert!(Coding(&mut w)
            .encode_utf8_views(&views[..20], &buffers, None, None, "f")
            .is_err());
        let outside = view(long, 2, 0);
        assert!(Coding(&mut w)
            .encode_utf8_views(&outside, &buffers, None, None, "f")
            .is_err());
        let past_end = view(long, 0, 30);
        assert!(Coding(&mut w)
            .encode_utf8_views(&past_end, &buffers, None, None, "f")
            .is_err());
        let mut negative = view(b"x", 0, 0);
        negative[..4].copy_from_slice(&(-3_i32).to_le_bytes());
        assert!(Coding(&mut w)
            .encode_utf8_views(&negative, &buffers, None, None, "f")
            .is_err());
        let not_utf8 = view(&[0xff, 0xfe], 0, 0);
        assert!(Coding(&mut w)
            .encode_utf8_views(&not_utf8, &buffers, None, None, "f")
            .is_err());
        assert!(Coding(&mut w)
            .encode_utf8_views(&views, &buffers, None, Some(&[6]), "f")
            .is_err());
    }

    #[test]
    fn saved_parts_round_trip() {
        let mut v = FeatureVocabulary::default();
        for key in [
            Key::Str("héllo"),
            Key::Int(-3),
            Key::Bool(false),
            Key::Bytes(&[0, 159]),
            Key::Object(9),
            Key::Str(""),
        ] {
            v.insert(key).unwrap();
        }
        let parts = v.to_parts();
        let back = FeatureVocabulary::from_parts(&parts).unwrap();
        assert!(back.values().eq(v.values()));
        assert_eq!(back.get(Key::Str("")), Some(5));
        let mut twice = parts.clone();
        twice.kinds.push(1);
        twice.ints.push(-3);
        assert!(FeatureVocabulary::from_parts(&twice).is_err());
    }

    #[test]
    fn integers_with_missing() {
        let mut v = FeatureVocabulary::default();
        let codes = Coding(&mut v)
            .encode_ints(
                [5_i64, 9, 5, 0].into_iter(),
                Some(&[false, false, false, true]),
            )
            .unwrap();
        assert_eq!(codes, vec![0, 1, 0, MISSING]);
        let codes = Coding(&v)
            .encode_ints([9_i64, 4].into_iter(), None)
            .unwrap();
        assert_eq!(codes, vec![1, UNKNOWN]);
    }
}
