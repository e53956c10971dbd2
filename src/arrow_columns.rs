//! Arrow columns read through the Arrow C data interface
//! (<https://arrow.apache.org/docs/format/CDataInterface.html>), without pyarrow and
//! without a Python object per value: the few array types a categorical column comes in
//! (utf8, large_utf8, string_view, dictionary, integer and boolean arrays, with their
//! validity bitmaps as missing values) become borrowed slices of the producer's buffers,
//! which the vocabulary codes ([`crate::vocabulary::Coding::encode_arrow`]).
//!
//! This is a narrow reader, not a dependency on the `arrow` crates: it reads the two C
//! structs the interface defines and six formats, and says "not read here" (`None`) for
//! every other format, which the caller then reads another way. The structs are owned
//! as the interface asks: whoever holds a released-to-be struct calls its `release`
//! callback exactly once ([`OwnedArray`], [`OwnedSchema`], [`ArrayStream`]).
//!
//! Safety rests on the producer honouring the interface (buffers as long as the format,
//! length and offset say, UTF-8 offsets inside the data buffer): every offset read from
//! the data is still checked against the slice it indexes, so a wrong offset is an
//! error, never a read outside the buffers; lengths the producer states are trusted.

use std::ffi::{c_char, c_void, CStr};

use crate::error::{HebError, Result};

/// `struct ArrowSchema` of the C data interface.
#[repr(C)]
#[derive(Debug)]
pub struct ArrowSchema {
    pub format: *const c_char,
    pub name: *const c_char,
    pub metadata: *const c_char,
    pub flags: i64,
    pub n_children: i64,
    pub children: *mut *mut ArrowSchema,
    pub dictionary: *mut ArrowSchema,
    pub release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    pub private_data: *mut c_void,
}

/// `struct ArrowArray` of the C data interface.
#[repr(C)]
#[derive(Debug)]
pub struct ArrowArray {
    pub length: i64,
    pub null_count: i64,
    pub offset: i64,
    pub n_buffers: i64,
    pub n_children: i64,
    pub buffers: *mut *const c_void,
    pub children: *mut *mut ArrowArray,
    pub dictionary: *mut ArrowArray,
    pub release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    pub private_data: *mut c_void,
}

/// `struct ArrowArrayStream` of the C stream interface.
#[repr(C)]
#[derive(Debug)]
pub struct ArrowArrayStream {
    pub get_schema: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowSchema) -> i32>,
    pub get_next: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowArray) -> i32>,
    pub get_last_error: Option<unsafe extern "C" fn(*mut ArrowArrayStream) -> *const c_char>,
    pub release: Option<unsafe extern "C" fn(*mut ArrowArrayStream)>,
    pub private_data: *mut c_void,
}

impl ArrowSchema {
    /// A released (empty) schema for a producer to fill.
    pub fn empty() -> Self {
        ArrowSchema {
            format: std::ptr::null(),
            name: std::ptr::null(),
            metadata: std::ptr::null(),
            flags: 0,
            n_children: 0,
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }
}

impl ArrowArray {
    /// A released (empty) array for a producer to fill.
    pub fn empty() -> Self {
        ArrowArray {
            length: 0,
            null_count: 0,
            offset: 0,
            n_buffers: 0,
            n_children: 0,
            buffers: std::ptr::null_mut(),
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }
}

/// A schema this side owns: released when dropped.
#[derive(Debug)]
pub struct OwnedSchema(pub ArrowSchema);

impl Drop for OwnedSchema {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: the producer filled the struct and handed it over; released once
            unsafe { release(&mut self.0) };
        }
    }
}

/// An array this side owns: released when dropped.
#[derive(Debug)]
pub struct OwnedArray(pub ArrowArray);

impl Drop for OwnedArray {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: as for `OwnedSchema`
            unsafe { release(&mut self.0) };
        }
    }
}

/// A stream borrowed from its owner (a PyCapsule, which releases it): its schema and
/// its arrays one by one.
pub struct ArrayStream {
    stream: *mut ArrowArrayStream,
}

impl ArrayStream {
    /// The stream at `stream`.
    ///
    /// # Safety
    /// `stream` points to a live `ArrowArrayStream` that outlives this value and that
    /// nothing else reads meanwhile.
    pub unsafe fn new(stream: *mut ArrowArrayStream) -> Result<Self> {
        if stream.is_null() || (*stream).release.is_none() {
            return Err(HebError::InvalidParameter(
                "an Arrow stream already consumed (released)".into(),
            ));
        }
        Ok(ArrayStream { stream })
    }

    fn error(&self, code: i32, what: &str) -> HebError {
        // SAFETY: the stream is live (see `new`)
        let message = unsafe {
            (*self.stream)
                .get_last_error
                .map(|get| get(self.stream))
                .filter(|p| !p.is_null())
                .map(|p| CStr::from_ptr(p).to_string_lossy().into_owned())
        };
        HebError::InvalidParameter(format!(
            "the Arrow stream failed to give its {what} (error {code}{})",
            message.map_or(String::new(), |m| format!(": {m}"))
        ))
    }

    /// The schema of every array of the stream.
    ///
    /// # Errors
    /// The producer reports an error.
    pub fn schema(&mut self) -> Result<OwnedSchema> {
        let mut schema = OwnedSchema(ArrowSchema::empty());
        // SAFETY: the stream is live; the callback fills `schema`, which we then own
        let code = unsafe {
            let get = (*self.stream).get_schema.ok_or_else(|| {
                HebError::InvalidParameter("an Arrow stream without get_schema".into())
            })?;
            get(self.stream, &mut schema.0)
        };
        if code != 0 {
            return Err(self.error(code, "schema"));
        }
        Ok(schema)
    }

    /// The next array, or None at the end of the stream.
    ///
    /// # Errors
    /// The producer reports an error.
    pub fn next_array(&mut self) -> Result<Option<OwnedArray>> {
        let mut array = OwnedArray(ArrowArray::empty());
        // SAFETY: as in `schema`
        let code = unsafe {
            let get = (*self.stream).get_next.ok_or_else(|| {
                HebError::InvalidParameter("an Arrow stream without get_next".into())
            })?;
            get(self.stream, &mut array.0)
        };
        if code != 0 {
            return Err(self.error(code, "next array"));
        }
        Ok(array.0.release.is_some().then_some(array))
    }
}

/// Validity: a bitmap and the bit of the first value (None: every value present).
pub type Validity<'a> = Option<(&'a [u8], usize)>;

/// Integer values of any width, from the array's offset on.
#[derive(Debug, Clone, Copy)]
pub enum Integers<'a> {
    I8(&'a [i8]),
    U8(&'a [u8]),
    I16(&'a [i16]),
    U16(&'a [u16]),
    I32(&'a [i32]),
    U32(&'a [u32]),
    I64(&'a [i64]),
    U64(&'a [u64]),
}

impl Integers<'_> {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Integers::I8(v) => v.len(),
            Integers::U8(v) => v.len(),
            Integers::I16(v) => v.len(),
            Integers::U16(v) => v.len(),
            Integers::I32(v) => v.len(),
            Integers::U32(v) => v.len(),
            Integers::I64(v) => v.len(),
            Integers::U64(v) => v.len(),
        }
    }

    /// Whether there is no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `k` as an `i128` (every width fits).
    #[inline]
    pub fn get(&self, k: usize) -> i128 {
        match self {
            Integers::I8(v) => v[k].into(),
            Integers::U8(v) => v[k].into(),
            Integers::I16(v) => v[k].into(),
            Integers::U16(v) => v[k].into(),
            Integers::I32(v) => v[k].into(),
            Integers::U32(v) => v[k].into(),
            Integers::I64(v) => v[k].into(),
            Integers::U64(v) => v[k].into(),
        }
    }
}

/// One Arrow array as borrowed slices, every one starting at the array's first value.
#[derive(Debug, Clone)]
pub enum ArrowColumn<'a> {
    /// utf8 (`offsets` 32-bit) or large_utf8 (64-bit): `length + 1` offsets into `data`.
    Utf8 {
        offsets: Offsets<'a>,
        data: &'a [u8],
        validity: Validity<'a>,
    },
    /// string_view: 16-byte views and the variadic data buffers.
    Views {
        views: &'a [u8],
        buffers: Vec<&'a [u8]>,
        validity: Validity<'a>,
    },
    /// Any integer width.
    Integers {
        values: Integers<'a>,
        validity: Validity<'a>,
    },
    /// Booleans: a bitmap and the bit of the first value.
    Booleans {
        bits: &'a [u8],
        bit_offset: usize,
        length: usize,
        validity: Validity<'a>,
    },
    /// Dictionary-encoded: integer indices into `dictionary` (not itself a dictionary).
    Dictionary {
        indices: Integers<'a>,
        validity: Validity<'a>,
        dictionary: Box<ArrowColumn<'a>>,
    },
    /// Every value missing.
    Null { length: usize },
}

/// utf8 offsets (32-bit) or large_utf8 offsets (64-bit).
#[derive(Debug, Clone, Copy)]
pub enum Offsets<'a> {
    Small(&'a [i32]),
    Large(&'a [i64]),
}

impl<'a> ArrowColumn<'a> {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            ArrowColumn::Utf8 { offsets, .. } => match offsets {
                Offsets::Small(o) => o.len().saturating_sub(1),
                Offsets::Large(o) => o.len().saturating_sub(1),
            },
            ArrowColumn::Views { views, .. } => views.len() / 16,
            ArrowColumn::Integers { values, .. } => values.len(),
            ArrowColumn::Booleans { length, .. } => *length,
            ArrowColumn::Dictionary { indices, .. } => indices.len(),
            ArrowColumn::Null { length } => *length,
        }
    }

    /// Whether there is no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every integer (of the column or its dictionary) fits in an `i64`: only
    /// uint64 values can fail to.
    pub fn fits_int64(&self) -> bool {
        match self {
            ArrowColumn::Integers {
                values: Integers::U64(v),
                ..
            } => v.iter().all(|&x| i64::try_from(x).is_ok()),
            ArrowColumn::Dictionary { dictionary, .. } => dictionary.fits_int64(),
            _ => true,
        }
    }

    /// The `length` values from value `start` (within the column), as a column.
    pub fn slice(&self, start: usize, length: usize) -> Self {
        let end = start + length;
        let shift = |validity: &Validity<'a>| validity.map(|(bits, first)| (bits, first + start));
        match self {
            ArrowColumn::Utf8 {
                offsets,
                data,
                validity,
            } => ArrowColumn::Utf8 {
                offsets: match offsets {
                    Offsets::Small(o) => Offsets::Small(&o[start..=end]),
                    Offsets::Large(o) => Offsets::Large(&o[start..=end]),
                },
                data,
                validity: shift(validity),
            },
            ArrowColumn::Views {
                views,
                buffers,
                validity,
            } => ArrowColumn::Views {
                views: &views[16 * start..16 * end],
                buffers: buffers.clone(),
                validity: shift(validity),
            },
            ArrowColumn::Integers { values, validity } => ArrowColumn::Integers {
                values: values.slice(start, end),
                validity: shift(validity),
            },
            ArrowColumn::Booleans {
                bits,
                bit_offset,
                validity,
                ..
            } => ArrowColumn::Booleans {
                bits,
                bit_offset: bit_offset + start,
                length,
                validity: shift(validity),
            },
            ArrowColumn::Dictionary {
                indices,
                validity,
                dictionary,
            } => ArrowColumn::Dictionary {
                indices: indices.slice(start, end),
                validity: shift(validity),
                dictionary: dictionary.clone(),
            },
            ArrowColumn::Null { .. } => ArrowColumn::Null { length },
        }
    }
}

impl<'a> Integers<'a> {
    /// Values `start..end`.
    fn slice(&self, start: usize, end: usize) -> Integers<'a> {
        match *self {
            Integers::I8(v) => Integers::I8(&v[start..end]),
            Integers::U8(v) => Integers::U8(&v[start..end]),
            Integers::I16(v) => Integers::I16(&v[start..end]),
            Integers::U16(v) => Integers::U16(&v[start..end]),
            Integers::I32(v) => Integers::I32(&v[start..end]),
            Integers::U32(v) => Integers::U32(&v[start..end]),
            Integers::I64(v) => Integers::I64(&v[start..end]),
            Integers::U64(v) => Integers::U64(&v[start..end]),
        }
    }
}

fn malformed(why: &str) -> HebError {
    HebError::InvalidParameter(format!("a malformed Arrow array: {why}"))
}

/// Why a column is not read: malformed, or a buffer not aligned to its values (one
/// unpickled from a byte stream, as Dask ships partitions), which the caller copies.
enum Unread {
    Malformed(HebError),
    Unaligned,
}

impl From<HebError> for Unread {
    fn from(error: HebError) -> Self {
        Unread::Malformed(error)
    }
}

type Reading<T> = std::result::Result<T, Unread>;

/// `n` values of `T` at `buffer` from value `start`, or an empty slice for `n == 0`.
///
/// # Safety
/// `buffer` holds at least `start + n` values of `T` (the interface's promise).
unsafe fn values<'a, T>(buffer: *const c_void, start: usize, n: usize) -> Reading<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if buffer.is_null() {
        return Err(malformed("a null data buffer").into());
    }
    let first = (buffer as *const T).add(start);
    if !first.is_aligned() {
        return Err(Unread::Unaligned);
    }
    Ok(std::slice::from_raw_parts(first, n))
}

/// The array's buffer `k` (null where absent).
///
/// # Safety
/// `array` is a live array with `n_buffers` buffers.
unsafe fn buffer(array: &ArrowArray, k: usize) -> Reading<*const c_void> {
    if k as i64 >= array.n_buffers || array.buffers.is_null() {
        return Err(malformed("too few buffers for its type").into());
    }
    Ok(*array.buffers.add(k))
}

/// The validity bitmap of `array` (buffer 0) with the bit of its first value.
///
/// # Safety
/// As [`buffer`].
unsafe fn validity<'a>(array: &ArrowArray, start: usize, n: usize) -> Reading<Validity<'a>> {
    let bitmap = buffer(array, 0)?;
    if array.null_count == 0 || bitmap.is_null() || n == 0 {
        return Ok(None);
    }
    let bytes = (start + n).div_ceil(8);
    Ok(Some((values::<u8>(bitmap, 0, bytes)?, start)))
}

/// The integer values of `n` values from `start` of format `format` (one of the
/// interface's integer formats), or None for another format.
///
/// # Safety
/// As [`buffer`]; the values buffer is buffer 1.
unsafe fn integers<'a>(
    format: &[u8],
    array: &ArrowArray,
    start: usize,
    n: usize,
) -> Reading<Option<Integers<'a>>> {
    let data = || buffer(array, 1);
    Ok(Some(match format {
        b"c" => Integers::I8(values(data()?, start, n)?),
        b"C" => Integers::U8(values(data()?, start, n)?),
        b"s" => Integers::I16(values(data()?, start, n)?),
        b"S" => Integers::U16(values(data()?, start, n)?),
        b"i" => Integers::I32(values(data()?, start, n)?),
        b"I" => Integers::U32(values(data()?, start, n)?),
        b"l" => Integers::I64(values(data()?, start, n)?),
        b"L" => Integers::U64(values(data()?, start, n)?),
        _ => return Ok(None),
    }))
}

/// The column that `array` (of schema `schema`) holds, or None where its type is not
/// one this reader reads (the caller reads it another way).
///
/// # Safety
/// `schema` and `array` are live structs of the C data interface describing one array
/// (not released while the column is used).
///
/// # Errors
/// A negative length or offset, missing buffers, a dictionary whose values are
/// themselves a dictionary.
pub unsafe fn read_column<'a>(
    schema: &'a ArrowSchema,
    array: &'a ArrowArray,
) -> Result<Option<ArrowColumn<'a>>> {
    match read(schema, array) {
        Ok(column) => Ok(column),
        Err(Unread::Unaligned) => Ok(None),
        Err(Unread::Malformed(error)) => Err(error),
    }
}

/// [`read_column`], telling an unaligned buffer apart.
unsafe fn read<'a>(
    schema: &'a ArrowSchema,
    array: &'a ArrowArray,
) -> Reading<Option<ArrowColumn<'a>>> {
    if schema.format.is_null() {
        return Err(malformed("a schema without a format").into());
    }
    let format = CStr::from_ptr(schema.format).to_bytes();
    let n = usize::try_from(array.length).map_err(|_| malformed("a negative length"))?;
    let start = usize::try_from(array.offset).map_err(|_| malformed("a negative offset"))?;
    if !schema.dictionary.is_null() {
        let Some(indices) = integers(format, array, start, n)? else {
            return Ok(None);
        };
        if array.dictionary.is_null() {
            return Err(malformed("a dictionary type without its dictionary").into());
        }
        let inner_schema = &*schema.dictionary;
        if !inner_schema.dictionary.is_null() {
            return Ok(None);
        }
        let Some(dictionary) = read(inner_schema, &*array.dictionary)? else {
            return Ok(None);
        };
        return Ok(Some(ArrowColumn::Dictionary {
            indices,
            validity: validity(array, start, n)?,
            dictionary: Box::new(dictionary),
        }));
    }
    if let Some(values) = integers(format, array, start, n)? {
        return Ok(Some(ArrowColumn::Integers {
            values,
            validity: validity(array, start, n)?,
        }));
    }
    Ok(Some(match format {
        b"n" => ArrowColumn::Null { length: n },
        b"b" => ArrowColumn::Booleans {
            bits: values(buffer(array, 1)?, 0, (start + n).div_ceil(8))?,
            bit_offset: start,
            length: n,
            validity: validity(array, start, n)?,
        },
        b"u" | b"U" => {
            let offsets = if format == b"u" {
                Offsets::Small(values(buffer(array, 1)?, start, n + 1)?)
            } else {
                Offsets::Large(values(buffer(array, 1)?, start, n + 1)?)
            };
            // the data buffer ends at the last offset
            let end = match offsets {
                Offsets::Small(o) => o.last().map_or(0, |&e| e as i64),
                Offsets::Large(o) => o.last().copied().unwrap_or(0),
            };
            let end = usize::try_from(end).map_err(|_| malformed("a negative string offset"))?;
            ArrowColumn::Utf8 {
                offsets,
                data: values(buffer(array, 2)?, 0, end)?,
                validity: validity(array, start, n)?,
            }
        }
        b"vu" => {
            // buffers: validity, views, the variadic data buffers, their int64 lengths
            let n_buffers = usize::try_from(array.n_buffers)
                .ok()
                .filter(|&b| b >= 3)
                .ok_or_else(|| malformed("a string_view array without its buffer lengths"))?;
            let n_data = n_buffers - 3;
            let lengths: &[i64] = values(buffer(array, n_buffers - 1)?, 0, n_data)?;
            let mut buffers = Vec::with_capacity(n_data);
            for (k, &length) in lengths.iter().enumerate() {
                let length =
                    usize::try_from(length).map_err(|_| malformed("a negative buffer length"))?;
                buffers.push(values::<u8>(buffer(array, 2 + k)?, 0, length)?);
            }
            ArrowColumn::Views {
                views: values(buffer(array, 1)?, 16 * start, 16 * n)?,
                buffers,
                validity: validity(array, start, n)?,
            }
        }
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An array over buffers owned by the test (no release callback: nothing to free).
    fn array(
        length: i64,
        offset: i64,
        null_count: i64,
        buffers: &mut [*const c_void],
    ) -> ArrowArray {
        ArrowArray {
            length,
            null_count,
            offset,
            n_buffers: buffers.len() as i64,
            buffers: buffers.as_mut_ptr(),
            ..ArrowArray::empty()
        }
    }

    fn schema(format: &CStr) -> ArrowSchema {
        ArrowSchema {
            format: format.as_ptr(),
            ..ArrowSchema::empty()
        }
    }

    #[test]
    fn utf8_with_an_offset_and_validity() {
        let data = b"abcdef";
        let offsets: [i32; 5] = [0, 1, 3, 3, 6];
        let bitmap = [0b0000_1011_u8]; // value 2 missing
        let mut buffers = [
            bitmap.as_ptr() as *const c_void,
            offsets.as_ptr() as *const c_void,
            data.as_ptr() as *const c_void,
        ];
        let a = array(3, 1, 1, &mut buffers);
        let s = schema(c"u");
        let column = unsafe { read_column(&s, &a) }.unwrap().unwrap();
        let ArrowColumn::Utf8 {
            offsets: Offsets::Small(o),
            data: d,
            validity: Some((bits, first)),
        } = column
        else {
            panic!("{column:?}")
        };
        assert_eq!(o, &[1, 3, 3, 6]);
        assert_eq!(d, b"abcdef");
        assert_eq!((bits, first), (&bitmap[..], 1));
    }

    #[test]
    fn unknown_formats_are_not_read_and_bad_arrays_are_errors() {
        let values_: [f64; 2] = [1.0, 2.0];
        let mut buffers = [std::ptr::null(), values_.as_ptr() as *const c_void];
        let a = array(2, 0, 0, &mut buffers);
        assert!(unsafe { read_column(&schema(c"g"), &a) }.unwrap().is_none());
        let negative = array(-1, 0, 0, &mut buffers);
        assert!(unsafe { read_column(&schema(c"l"), &negative) }.is_err());
        let mut one = [std::ptr::null()];
        let short = array(2, 0, 0, &mut one);
        assert!(unsafe { read_column(&schema(c"l"), &short) }.is_err());
    }

    #[test]
    fn unaligned_buffers_are_left_to_the_caller() {
        // int32 offsets one byte past an aligned address (a buffer unpickled from bytes)
        let raw = [0_u8; 64];
        let base = raw.as_ptr().wrapping_add(4 - raw.as_ptr() as usize % 4 + 1);
        let data = b"ab";
        let mut buffers = [
            std::ptr::null(),
            base as *const c_void,
            data.as_ptr() as *const c_void,
        ];
        let a = array(1, 0, 0, &mut buffers);
        assert!(unsafe { read_column(&schema(c"u"), &a) }.unwrap().is_none());
    }

    #[test]
    fn a_dictionary_of_strings() {
        let data = b"xy";
        let offsets: [i32; 3] = [0, 1, 2];
        let mut dictionary_buffers = [
            std::ptr::null(),
            offsets.as_ptr() as *const c_void,
            data.as_ptr() as *const c_void,
        ];
        let mut dictionary = array(2, 0, 0, &mut dictionary_buffers);
        let indices: [i8; 3] = [1, 0, 1];
        let mut buffers = [std::ptr::null(), indices.as_ptr() as *const c_void];
        let mut a = array(3, 0, 0, &mut buffers);
        a.dictionary = &mut dictionary;
        let mut inner = schema(c"u");
        let mut s = schema(c"c");
        s.dictionary = &mut inner;
        let column = unsafe { read_column(&s, &a) }.unwrap().unwrap();
        let ArrowColumn::Dictionary {
            indices: Integers::I8(k),
            dictionary,
            ..
        } = column
        else {
            panic!("{column:?}")
        };
        assert_eq!(k, &[1, 0, 1]);
        assert_eq!(dictionary.len(), 2);
    }
}
