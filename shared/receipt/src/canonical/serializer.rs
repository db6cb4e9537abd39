//! A serde `Serializer` that writes RFC 8785 bytes straight from Rust values, with no
//! `serde_json::Value` in between: the signing path canonicalizes every response, and building
//! a `Value` tree first cost more than the signature's hashing.
//!
//! Objects are written member by member into the output; when an object ends, its members are
//! put in UTF-16 key order in place (one copy of that object's bytes, only when the order
//! differs). Numbers and strings use the same writers as the `Value` path.

use super::{CanonicalError, utf16_cmp, write_f64, write_i64, write_string, write_u64};
use serde::ser::{self, Serialize};
use std::borrow::Cow;
use std::cmp::Ordering;

/// One written object member: its key and the byte range of `"key":value` in the output.
struct Member {
    key: Cow<'static, str>,
    /// The key's first eight bytes, big-endian and zero-padded: comparing these orders most
    /// keys without touching the strings.
    prefix: u64,
    /// The key holds a character above U+FFFF, where UTF-16 order differs from byte order.
    astral: bool,
    start: usize,
    end: usize,
}

impl Member {
    fn new(key: Cow<'static, str>, start: usize) -> Self {
        let bytes = key.as_bytes();
        let prefix = match bytes.first_chunk::<8>() {
            Some(head) => u64::from_be_bytes(*head),
            None => bytes
                .iter()
                .enumerate()
                .fold(0u64, |acc, (i, &b)| acc | (u64::from(b) << (56 - 8 * i))),
        };
        Member {
            prefix,
            astral: !key.is_ascii() && bytes.iter().any(|&b| b >= 0xF0),
            key,
            start,
            end: start,
        }
    }

    fn order(&self, other: &Member) -> Ordering {
        if self.astral || other.astral {
            return utf16_cmp(&self.key, &other.key);
        }
        self.prefix
            .cmp(&other.prefix)
            .then_with(|| self.key.as_bytes().cmp(other.key.as_bytes()))
    }
}

/// The canonical writer. Members of open objects share one stack; each object knows where
/// its own members begin.
pub struct JcsSerializer<'o> {
    out: &'o mut Vec<u8>,
    members: Vec<Member>,
    scratch: Vec<u8>,
}

impl<'o> JcsSerializer<'o> {
    /// A writer appending to `out`.
    pub fn new(out: &'o mut Vec<u8>) -> Self {
        // Sized for a verification response (about 70 members), so the member stack does not
        // grow while a response is written; the scratch buffer is made on first use.
        JcsSerializer {
            out,
            members: Vec::with_capacity(64),
            scratch: Vec::new(),
        }
    }
}

/// Append the canonical form of any serializable value to `out`.
pub fn write_serialize<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), CanonicalError> {
    value.serialize(&mut JcsSerializer::new(out))
}

impl ser::Error for CanonicalError {
    fn custom<T: std::fmt::Display>(_msg: T) -> Self {
        CanonicalError
    }
}

/// An object being written.
pub struct ObjectWriter<'a, 'o> {
    ser: &'a mut JcsSerializer<'o>,
    /// Index of this object's first member on the shared stack.
    base: usize,
    /// Output offset just after `{`.
    body_start: usize,
}

impl<'a, 'o> ObjectWriter<'a, 'o> {
    fn open(ser: &'a mut JcsSerializer<'o>) -> Self {
        ser.out.push(b'{');
        let base = ser.members.len();
        let body_start = ser.out.len();
        ObjectWriter {
            ser,
            base,
            body_start,
        }
    }

    fn begin_member(&mut self, key: Cow<'static, str>) {
        if self.ser.members.len() > self.base {
            self.ser.out.push(b',');
        }
        let start = self.ser.out.len();
        write_string(self.ser.out, &key);
        self.ser.out.push(b':');
        self.ser.members.push(Member::new(key, start));
    }

    fn end_member(&mut self) {
        let end = self.ser.out.len();
        if let Some(m) = self.ser.members.last_mut() {
            m.end = end;
        }
    }

    fn member<T: Serialize + ?Sized>(
        &mut self,
        key: Cow<'static, str>,
        value: &T,
    ) -> Result<(), CanonicalError> {
        self.begin_member(key);
        value.serialize(&mut *self.ser)?;
        self.end_member();
        Ok(())
    }

    /// End the object; hands the writer back (a variant wrapper closes its own brace).
    fn close(self) -> Result<&'a mut JcsSerializer<'o>, CanonicalError> {
        let ser = self.ser;
        let members = &mut ser.members[self.base..];
        let sorted = members
            .windows(2)
            .all(|w| w[0].order(&w[1]) == Ordering::Less);
        if !sorted {
            members.sort_unstable_by(Member::order);
            if members
                .windows(2)
                .any(|w| w[0].order(&w[1]) == Ordering::Equal)
            {
                return Err(CanonicalError);
            }
            let body = &ser.out[self.body_start..];
            if ser.scratch.capacity() < body.len() {
                // A fresh buffer as large as the output can hold: one allocation, no regrowth.
                ser.scratch = Vec::with_capacity(ser.out.capacity().max(body.len()));
            }
            ser.scratch.clear();
            ser.scratch.extend_from_slice(body);
            ser.out.truncate(self.body_start);
            for (i, m) in members.iter().enumerate() {
                if i > 0 {
                    ser.out.push(b',');
                }
                let (from, to) = (m.start - self.body_start, m.end - self.body_start);
                ser.out.extend_from_slice(&ser.scratch[from..to]);
            }
        }
        ser.members.truncate(self.base);
        ser.out.push(b'}');
        Ok(ser)
    }
}

/// An array being written.
pub struct ArrayWriter<'a, 'o> {
    ser: &'a mut JcsSerializer<'o>,
    first: bool,
}

impl ArrayWriter<'_, '_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonicalError> {
        if !self.first {
            self.ser.out.push(b',');
        }
        self.first = false;
        value.serialize(&mut *self.ser)
    }

    fn close(self) {
        self.ser.out.push(b']');
    }
}

/// A variant wrapper `{"Variant": …}` around an array or object.
pub struct VariantWriter<'a, 'o, W> {
    inner: W,
    _outer: std::marker::PhantomData<(&'a (), &'o ())>,
}

impl<'a, 'o> ser::Serializer for &'a mut JcsSerializer<'o> {
    type Ok = ();
    type Error = CanonicalError;
    type SerializeSeq = ArrayWriter<'a, 'o>;
    type SerializeTuple = ArrayWriter<'a, 'o>;
    type SerializeTupleStruct = ArrayWriter<'a, 'o>;
    type SerializeTupleVariant = VariantWriter<'a, 'o, ArrayWriter<'a, 'o>>;
    type SerializeMap = MapWriter<'a, 'o>;
    type SerializeStruct = ObjectWriter<'a, 'o>;
    type SerializeStructVariant = VariantWriter<'a, 'o, ObjectWriter<'a, 'o>>;

    fn serialize_bool(self, v: bool) -> Result<(), CanonicalError> {
        self.out
            .extend_from_slice(if v { b"true" as &[u8] } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), CanonicalError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), CanonicalError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), CanonicalError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), CanonicalError> {
        write_i64(self.out, v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), CanonicalError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), CanonicalError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), CanonicalError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), CanonicalError> {
        write_u64(self.out, v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), CanonicalError> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), CanonicalError> {
        if !v.is_finite() {
            return Err(CanonicalError);
        }
        write_f64(self.out, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), CanonicalError> {
        write_string(self.out, v.encode_utf8(&mut [0u8; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), CanonicalError> {
        write_string(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), CanonicalError> {
        let mut seq = ser::Serializer::serialize_seq(self, Some(v.len()))?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        ser::SerializeSeq::end(seq)
    }
    fn serialize_none(self) -> Result<(), CanonicalError> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), CanonicalError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), CanonicalError> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), CanonicalError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), CanonicalError> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        let mut obj = ObjectWriter::open(self);
        obj.member(Cow::Borrowed(variant), value)?;
        obj.close().map(|_| ())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<ArrayWriter<'a, 'o>, CanonicalError> {
        self.out.push(b'[');
        Ok(ArrayWriter {
            ser: self,
            first: true,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<ArrayWriter<'a, 'o>, CanonicalError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<ArrayWriter<'a, 'o>, CanonicalError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, CanonicalError> {
        // `{"variant":[…]}`: one member whose value is the array.
        self.out.push(b'{');
        write_string(self.out, variant);
        self.out.extend_from_slice(b":[");
        Ok(VariantWriter {
            inner: ArrayWriter {
                ser: self,
                first: true,
            },
            _outer: std::marker::PhantomData,
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<MapWriter<'a, 'o>, CanonicalError> {
        Ok(MapWriter {
            object: ObjectWriter::open(self),
        })
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<ObjectWriter<'a, 'o>, CanonicalError> {
        Ok(ObjectWriter::open(self))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, CanonicalError> {
        self.out.push(b'{');
        write_string(self.out, variant);
        self.out.push(b':');
        Ok(VariantWriter {
            inner: ObjectWriter::open(self),
            _outer: std::marker::PhantomData,
        })
    }
}

impl ser::SerializeSeq for ArrayWriter<'_, '_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.close();
        Ok(())
    }
}

impl ser::SerializeTuple for ArrayWriter<'_, '_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.close();
        Ok(())
    }
}

impl ser::SerializeTupleStruct for ArrayWriter<'_, '_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.close();
        Ok(())
    }
}

impl ser::SerializeTupleVariant for VariantWriter<'_, '_, ArrayWriter<'_, '_>> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.inner.element(value)
    }
    fn end(self) -> Result<(), CanonicalError> {
        let ser = self.inner.ser;
        ser.out.extend_from_slice(b"]}");
        Ok(())
    }
}

impl ser::SerializeStruct for ObjectWriter<'_, '_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        self.member(Cow::Borrowed(key), value)
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.close().map(|_| ())
    }
}

impl ser::SerializeStructVariant for VariantWriter<'_, '_, ObjectWriter<'_, '_>> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        self.inner.member(Cow::Borrowed(key), value)
    }
    fn end(self) -> Result<(), CanonicalError> {
        let ser = self.inner.close()?;
        ser.out.push(b'}');
        Ok(())
    }
}

/// A map being written: keys must serialize as strings.
pub struct MapWriter<'a, 'o> {
    object: ObjectWriter<'a, 'o>,
}

impl ser::SerializeMap for MapWriter<'_, '_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        let key = key.serialize(KeyCapture)?;
        self.object.begin_member(Cow::Owned(key));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        value.serialize(&mut *self.object.ser)?;
        self.object.end_member();
        Ok(())
    }
    fn end(self) -> Result<(), CanonicalError> {
        self.object.close().map(|_| ())
    }
}

/// Captures a map key as a string (JSON object keys are strings; integers become their text,
/// as serde_json does).
struct KeyCapture;

impl ser::Serializer for KeyCapture {
    type Ok = String;
    type Error = CanonicalError;
    type SerializeSeq = ser::Impossible<String, CanonicalError>;
    type SerializeTuple = ser::Impossible<String, CanonicalError>;
    type SerializeTupleStruct = ser::Impossible<String, CanonicalError>;
    type SerializeTupleVariant = ser::Impossible<String, CanonicalError>;
    type SerializeMap = ser::Impossible<String, CanonicalError>;
    type SerializeStruct = ser::Impossible<String, CanonicalError>;
    type SerializeStructVariant = ser::Impossible<String, CanonicalError>;

    fn serialize_str(self, v: &str) -> Result<String, CanonicalError> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String, CanonicalError> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String, CanonicalError> {
        value.serialize(self)
    }
    fn serialize_i64(self, v: i64) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, CanonicalError> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String, CanonicalError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<String, CanonicalError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<String, CanonicalError> {
        self.serialize_i64(v.into())
    }
    fn serialize_u8(self, v: u8) -> Result<String, CanonicalError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<String, CanonicalError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<String, CanonicalError> {
        self.serialize_u64(v.into())
    }
    fn serialize_bool(self, _v: bool) -> Result<String, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_f32(self, _v: f32) -> Result<String, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_f64(self, _v: f64) -> Result<String, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<String, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_none(self) -> Result<String, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<String, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_unit(self) -> Result<String, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<String, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, CanonicalError> {
        Err(CanonicalError)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, CanonicalError> {
        Err(CanonicalError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn jcs<T: Serialize>(v: &T) -> String {
        let mut out = Vec::new();
        write_serialize(&mut out, v).expect("serializes");
        String::from_utf8(out).expect("utf-8")
    }

    #[derive(Serialize)]
    struct Inner {
        zeta: f64,
        alpha: Option<&'static str>,
    }

    #[derive(Serialize)]
    struct Outer {
        b: Vec<Inner>,
        a: u64,
        #[serde(flatten)]
        extra: BTreeMap<String, i64>,
        c: Kind,
        d: Kind,
    }

    #[derive(Serialize)]
    enum Kind {
        Unit,
        Pair(u8, u8),
        Named { y: bool, x: bool },
    }

    #[test]
    fn structs_come_out_sorted_and_match_the_value_path() {
        let v = Outer {
            b: vec![
                Inner {
                    zeta: 135.0,
                    alpha: None,
                },
                Inner {
                    zeta: 1e21,
                    alpha: Some("\u{1F602}\n"),
                },
            ],
            a: 7,
            extra: [("aa".to_owned(), -3), ("\u{FB33}".to_owned(), 1)].into(),
            c: Kind::Pair(1, 2),
            d: Kind::Named { y: true, x: false },
        };
        let direct = jcs(&v);
        let via_value = String::from_utf8(super::super::value_to_jcs(
            &serde_json::to_value(&v).expect("to value"),
        ))
        .expect("utf-8");
        assert_eq!(direct, via_value);
        assert_eq!(
            direct,
            "{\"a\":7,\"aa\":-3,\"b\":[{\"alpha\":null,\"zeta\":135},{\"alpha\":\"\u{1F602}\\n\",\"zeta\":1e+21}],\"c\":{\"Pair\":[1,2]},\"d\":{\"Named\":{\"x\":false,\"y\":true}},\"\u{FB33}\":1}"
        );
        assert_eq!(jcs(&Kind::Unit), r#""Unit""#);
    }

    #[test]
    fn values_and_nested_objects() {
        let v = json!({"z": {"y": [1, {"b": 2, "a": 1}], "x": -0.0}, "a": "é"});
        assert_eq!(jcs(&v), r#"{"a":"é","z":{"x":0,"y":[1,{"a":1,"b":2}]}}"#);
    }

    #[test]
    fn non_finite_numbers_and_duplicate_keys_are_errors() {
        let mut out = Vec::new();
        assert!(write_serialize(&mut out, &f64::NAN).is_err());
        #[derive(Serialize)]
        struct Dup {
            a: u8,
            #[serde(flatten)]
            more: BTreeMap<String, u8>,
        }
        let dup = Dup {
            a: 1,
            more: [("a".to_owned(), 2)].into(),
        };
        assert!(write_serialize(&mut Vec::new(), &dup).is_err());
    }
}
