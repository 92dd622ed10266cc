//! Bounds-checked big-endian field access: [`Reader`] over received bytes, [`Writer`] over an
//! output buffer. All wire encoding and decoding goes through these two.
//!
//! They must never panic, never index without a bounds check, and never read or write a field
//! partially: a read that does not fit returns `Truncated` at the field's offset, a write that
//! does not fit returns `DoesNotFit` and leaves the buffer untouched. Floats must be finite in
//! both directions.

use super::error::{DecodeError, DecodeProblem, EncodeError};

/// Reads fields one by one from a byte slice, tracking the offset for error reports.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Offset of `bytes[0]` in the whole packet (for sub-readers over an event body).
    base: usize,
}

impl<'a> Reader<'a> {
    /// A reader over a whole packet (offsets count from `bytes[0]`).
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            pos: 0,
            base: 0,
        }
    }

    /// A reader whose reported offsets start at `base` (a part of a larger packet).
    pub fn with_base(bytes: &'a [u8], base: usize) -> Self {
        Reader {
            bytes,
            pos: 0,
            base,
        }
    }

    /// Offset of the next byte to read, counted from the start of the packet.
    pub fn offset(&self) -> usize {
        self.base.saturating_add(self.pos)
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    /// Whether everything has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// An error for the field starting at the current offset.
    pub fn error(&self, problem: DecodeProblem) -> DecodeError {
        DecodeError::new(self.offset(), problem)
    }

    /// The next `n` bytes, or `Truncated` (nothing consumed).
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or_else(|| self.error(DecodeProblem::Truncated))?;
        let slice = self
            .bytes
            .get(self.pos..end)
            .ok_or_else(|| self.error(DecodeProblem::Truncated))?;
        self.pos = end;
        Ok(slice)
    }

    /// The next `n` bytes as a reader of their own (offsets continue this reader's).
    pub fn sub(&mut self, n: usize) -> Result<Reader<'a>, DecodeError> {
        let base = self.offset();
        let bytes = self.take(n)?;
        Ok(Reader::with_base(bytes, base))
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let start = self.offset();
        let slice = self.take(N)?;
        <[u8; N]>::try_from(slice).map_err(|_| DecodeError::new(start, DecodeProblem::Truncated))
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(u8::from_be_bytes(self.array::<1>()?))
    }

    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array::<2>()?))
    }

    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array::<4>()?))
    }

    /// A big-endian binary32; NaN and infinities are rejected (`NonFiniteFloat` at its offset).
    pub fn f32(&mut self) -> Result<f32, DecodeError> {
        let start = self.offset();
        let value = f32::from_bits(self.u32()?);
        if value.is_finite() {
            Ok(value)
        } else {
            Err(DecodeError::new(start, DecodeProblem::NonFiniteFloat))
        }
    }

    /// `N` finite floats in a row.
    pub fn f32s<const N: usize>(&mut self) -> Result<[f32; N], DecodeError> {
        let mut out = [0.0f32; N];
        for slot in out.iter_mut() {
            *slot = self.f32()?;
        }
        Ok(out)
    }
}

/// Writes fields one by one into a buffer; every write checks room first.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }

    /// Bytes written so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Room left.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Write `bytes` whole, or nothing (`DoesNotFit`).
    pub fn bytes(&mut self, bytes: &[u8]) -> Result<(), EncodeError> {
        let available = self.buf.len();
        let end = self
            .pos
            .checked_add(bytes.len())
            .ok_or(EncodeError::DoesNotFit {
                needed: usize::MAX,
                available,
            })?;
        let dest = self
            .buf
            .get_mut(self.pos..end)
            .ok_or(EncodeError::DoesNotFit {
                needed: end,
                available,
            })?;
        dest.copy_from_slice(bytes);
        self.pos = end;
        Ok(())
    }

    pub fn u8(&mut self, v: u8) -> Result<(), EncodeError> {
        self.bytes(&v.to_be_bytes())
    }

    pub fn u16(&mut self, v: u16) -> Result<(), EncodeError> {
        self.bytes(&v.to_be_bytes())
    }

    pub fn u32(&mut self, v: u32) -> Result<(), EncodeError> {
        self.bytes(&v.to_be_bytes())
    }

    /// A finite float as its big-endian bit pattern; NaN and infinities are refused.
    pub fn f32(&mut self, v: f32) -> Result<(), EncodeError> {
        if !v.is_finite() {
            return Err(EncodeError::NonFiniteFloat);
        }
        self.u32(v.to_bits())
    }

    pub fn f32s(&mut self, values: &[f32]) -> Result<(), EncodeError> {
        if values.iter().any(|v| !v.is_finite()) {
            return Err(EncodeError::NonFiniteFloat);
        }
        let needed = values.len().saturating_mul(4);
        if needed > self.remaining() {
            return Err(EncodeError::DoesNotFit {
                needed: self.pos.saturating_add(needed),
                available: self.buf.len(),
            });
        }
        for v in values {
            self.u32(v.to_bits())?;
        }
        Ok(())
    }
}
