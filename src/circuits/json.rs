//! Requests read without building a `serde_json::Value` of them: a request's C1 output is
//! tens of MB of JSON numbers, and a `Value` of it takes ~8x its text. The top-level object
//! is read as borrowed raw values; arrays are streamed element by element; only an object's
//! own members are held (as raw text) to sort them.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Why a body is not a request object.
#[derive(Debug)]
pub enum NotObject {
    /// Not JSON at all.
    Malformed(serde_json::Error),
    /// JSON, but not an object.
    NotAnObject,
}

/// The members of the JSON object `text`, each as its raw text (the last of a repeated key).
pub fn object(text: &[u8]) -> Result<BTreeMap<String, &RawValue>, NotObject> {
    serde_json::from_slice(text).map_err(|e| match serde_json::from_slice::<IgnoredAny>(text) {
        Ok(_) => NotObject::NotAnObject,
        Err(_) => NotObject::Malformed(e),
    })
}

/// `members` as one canonical JSON object: the bytes `serde_json::to_vec` writes for the
/// `Value` of the same text (no whitespace, every object's keys sorted, the last of a repeated
/// key kept, strings and numbers as serde_json writes them).
pub fn canonical_object(
    members: &BTreeMap<String, &RawValue>,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(members.values().map(|v| v.get().len()).sum::<usize>() + 64);
    write_object(members.iter().map(|(k, v)| (k.as_str(), *v)), &mut out)?;
    Ok(out)
}

fn write_object<'a>(
    members: impl Iterator<Item = (&'a str, &'a RawValue)>,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    out.push(b'{');
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key)?;
        out.push(b':');
        let mut de = serde_json::Deserializer::from_str(value.get());
        Canonical { out: &mut *out }.deserialize(&mut de)?;
    }
    out.push(b'}');
    Ok(())
}

/// Writes the value it reads, canonically, into `out`.
struct Canonical<'o> {
    out: &'o mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for Canonical<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Canonical<'_> {
    fn write<T: serde::Serialize + ?Sized, E: serde::de::Error>(self, v: &T) -> Result<(), E> {
        serde_json::to_writer(self.out, v).map_err(E::custom)
    }
}

impl<'de> Visitor<'de> for Canonical<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(), E> {
        self.write(&v)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.write(&v)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.write(&v)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        // As a Value writes it: a float that is not finite cannot come from JSON text.
        self.write(&serde_json::Number::from_f64(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.write(v)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.out;
        out.push(b'[');
        let mut first = true;
        loop {
            let mark = out.len();
            if !first {
                out.push(b',');
            }
            if seq
                .next_element_seed(Canonical { out: &mut *out })?
                .is_none()
            {
                out.truncate(mark);
                break;
            }
            first = false;
        }
        out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // An object's members are sorted: held as raw text, then written in key order.
        let mut members: BTreeMap<String, &'de RawValue> = BTreeMap::new();
        while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
            members.insert(key, value);
        }
        write_object(members.iter().map(|(k, v)| (k.as_str(), *v)), self.out)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through_value(text: &str) -> Vec<u8> {
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        serde_json::to_vec(&value).unwrap()
    }

    #[test]
    fn the_canonical_form_is_the_bytes_a_value_writes() {
        for text in [
            r#"{"b": 1, "a": [1, -2, 3.5, 1e3, 18446744073709551615, -9223372036854775808], "c": null}"#,
            r#"{"z": {"y": {"x": [true, false, {"k": "v", "a": "\u0041\n\"é"}]}}, "a": []}"#,
            r#"{"dup": 1, "dup": 2, "e": {}, "f": [[], [[]], {}], "g": 0.1, "h": -0.0}"#,
            r#"{"big": 12345678901234567890123, "s": "\ud83d\ude00", "t": "tab\there"}"#,
        ] {
            let members = object(text.as_bytes()).unwrap();
            assert_eq!(
                String::from_utf8(canonical_object(&members).unwrap()).unwrap(),
                String::from_utf8(through_value(text)).unwrap(),
                "{text}"
            );
        }
    }

    /// Found by fuzzing: an integer past 64 bits is read as the nearest f64 and written in
    /// exponent form; without correctly rounded parsing (serde_json's `float_roundtrip`) that
    /// text read again was another f64, and the canonical form of a canonical form differed.
    #[test]
    fn the_canonical_form_of_a_canonical_form_is_itself() {
        for text in [
            r#"{"n": 9133333333333333333333333333333333333333333}"#,
            r#"{"f": [0.1, 2.2250738585072014e-308, 1.7976931348623157e308, 123456789.12345678]}"#,
            r#"{"m": -91333333333333333333333333.333333e-3, "s": "x"}"#,
        ] {
            let once = canonical_object(&object(text.as_bytes()).unwrap()).unwrap();
            let twice = canonical_object(&object(&once).unwrap()).unwrap();
            assert_eq!(
                String::from_utf8(twice).unwrap(),
                String::from_utf8(once).unwrap(),
                "{text}"
            );
        }
    }

    #[test]
    fn bodies_that_are_not_objects_are_told_apart_from_bodies_that_are_not_json() {
        assert!(matches!(object(b"[1, 2]"), Err(NotObject::NotAnObject)));
        assert!(matches!(object(b"\"x\""), Err(NotObject::NotAnObject)));
        assert!(matches!(object(b"{\"a\": "), Err(NotObject::Malformed(_))));
        assert!(matches!(object(b"{} x"), Err(NotObject::Malformed(_))));
    }
}
