//! The typed proof request: one model for every proof kind, shared by `cuzk prove` and the REST
//! API. It carries the inputs in the forms Curio holds them; [`ProofRequest::prepare`] checks
//! every field and turns the request into a [`ProofJob`].
//!
//! JSON: `{"kind": "window-post", ...}`. Byte strings are base64; 32-byte values (commitments,
//! randomness, prover id) are 64 hex digits, base64, or an array of 32 numbers (as in C1 JSON).

use std::fmt;

use base64::Engine as _;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::oracle::OracleJob;
use super::post::PoStJob;
use super::{prover_id_from_miner, CircuitError, ProofJob};

/// The four proof kinds the appliance proves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProofKind {
    /// PoRep C2 (seal commit phase 2) from a C1 output.
    PorepC2,
    /// SnapDeals: the empty-sector-update proof from per-partition vanilla proofs.
    SnapDeals,
    /// One partition of a WindowPoSt.
    WindowPost,
    /// A WinningPoSt.
    WinningPost,
}

impl ProofKind {
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PorepC2,
        ProofKind::SnapDeals,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProofKind::PorepC2 => "porep-c2",
            ProofKind::SnapDeals => "snap-deals",
            ProofKind::WindowPost => "window-post",
            ProofKind::WinningPost => "winning-post",
        }
    }
}

/// A kind by its name (`porep-c2`, `snap-deals`, `window-post`, `winning-post`; `porep` and
/// `snap` for short).
impl std::str::FromStr for ProofKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let alias = match s {
            "porep" => Some(ProofKind::PorepC2),
            "snap" => Some(ProofKind::SnapDeals),
            _ => None,
        };
        alias
            .or_else(|| ProofKind::ALL.into_iter().find(|k| k.as_str() == s))
            .ok_or_else(|| {
                let names: Vec<&str> = ProofKind::ALL.iter().map(|k| k.as_str()).collect();
                format!("{s:?} is not a proof kind ({})", names.join(", "))
            })
    }
}

impl fmt::Display for ProofKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A proof request as it arrives (JSON; read with [`ProofRequest::from_json`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ProofRequest {
    PorepC2(PorepC2Request),
    SnapDeals(SnapDealsRequest),
    WindowPost(WindowPostRequest),
    WinningPost(WinningPostRequest),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PorepC2Request {
    /// The C1 output (SealCommitPhase1Output JSON, or Curio's {"SectorNum","Phase1Out",
    /// "SectorSize"} envelope): as a JSON value, or its bytes in base64.
    pub c1: C1Input,
    pub miner_id: u64,
    pub sector_number: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapDealsRequest {
    pub registered_proof: RegisteredUpdateProof,
    /// One bincode `PartitionProof` per partition, in partition order.
    pub vanilla_proofs: Vec<Base64>,
    pub comm_r_old: Bytes32,
    pub comm_r_new: Bytes32,
    pub comm_d_new: Bytes32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowPostRequest {
    pub registered_proof: RegisteredPoStProof,
    pub randomness: Bytes32,
    /// The miner actor's ID (give this or `prover_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miner_id: Option<u64>,
    /// The 32-byte prover id (give this or `miner_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prover_id: Option<Bytes32>,
    pub partition_index: usize,
    /// One bincode `FallbackPoStSectorProof` per sector of this partition.
    pub vanilla_proofs: Vec<Base64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WinningPostRequest {
    pub registered_proof: RegisteredPoStProof,
    pub randomness: Bytes32,
    /// The miner actor's ID (give this or `prover_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miner_id: Option<u64>,
    /// The 32-byte prover id (give this or `miner_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prover_id: Option<Bytes32>,
    /// One bincode `FallbackPoStSectorProof` per challenged sector.
    pub vanilla_proofs: Vec<Base64>,
}

/// The prover id from exactly one of `miner_id` and `prover_id`.
fn prover_id(miner_id: Option<u64>, prover_id: Option<Bytes32>) -> Result<[u8; 32], CircuitError> {
    match (miner_id, prover_id) {
        (Some(id), None) => Ok(prover_id_from_miner(id)),
        (None, Some(id)) => Ok(id.0),
        (None, None) => Err(CircuitError::invalid(
            "miner_id",
            "missing (or give prover_id)",
        )),
        (Some(_), Some(_)) => Err(CircuitError::invalid(
            "prover_id",
            "give either miner_id or prover_id, not both",
        )),
    }
}

impl ProofRequest {
    /// Parses a JSON request; an error names the field that is wrong.
    pub fn from_json(bytes: &[u8]) -> Result<Self, CircuitError> {
        use super::json::{object, NotObject};
        // No Value of the whole request: its members are read as raw text.
        let mut members = object(bytes).map_err(|e| match e {
            NotObject::Malformed(e) => CircuitError::invalid("request", format!("not JSON: {e}")),
            NotObject::NotAnObject => CircuitError::invalid("request", "not a JSON object"),
        })?;
        // The kind is read first and the fields of that kind then, so that a field's error
        // carries its path (serde's internally tagged enums lose it).
        let kind = members
            .remove("kind")
            .ok_or_else(|| CircuitError::invalid("kind", "missing"))?;
        let kind: ProofKind = serde_json::from_str(kind.get())
            .map_err(|e| CircuitError::invalid("kind", e.to_string()))?;
        Ok(match kind {
            ProofKind::PorepC2 => ProofRequest::PorepC2(fields(members)?),
            ProofKind::SnapDeals => ProofRequest::SnapDeals(fields(members)?),
            ProofKind::WindowPost => ProofRequest::WindowPost(fields(members)?),
            ProofKind::WinningPost => ProofRequest::WinningPost(fields(members)?),
        })
    }

    pub fn kind(&self) -> ProofKind {
        match self {
            ProofRequest::PorepC2(_) => ProofKind::PorepC2,
            ProofRequest::SnapDeals(_) => ProofKind::SnapDeals,
            ProofRequest::WindowPost(_) => ProofKind::WindowPost,
            ProofRequest::WinningPost(_) => ProofKind::WinningPost,
        }
    }

    /// Checks every field and builds the job: one circuit per partition, and its verifier.
    pub fn prepare(self) -> Result<Box<dyn ProofJob>, CircuitError> {
        let job: Box<dyn ProofJob> = self.prepare_with_oracle()?;
        Ok(job)
    }

    /// As [`ProofRequest::prepare`], with bellperson's prover on the same circuits beside it
    /// (for tests and benchmarks).
    pub fn prepare_with_oracle(self) -> Result<Box<dyn OracleJob>, CircuitError> {
        Ok(match self {
            ProofRequest::PorepC2(r) => Box::new(super::porep::PoRepC2::from_c1(
                &r.c1.to_bytes()?,
                r.miner_id,
                r.sector_number,
            )?),
            ProofRequest::SnapDeals(r) => Box::new(super::snap::SnapDeals::new(
                r.registered_proof,
                &Base64::inner(&r.vanilla_proofs),
                r.comm_r_old.0,
                r.comm_r_new.0,
                r.comm_d_new.0,
            )?),
            ProofRequest::WindowPost(r) => Box::new(PoStJob::window(
                r.registered_proof,
                r.randomness.0,
                prover_id(r.miner_id, r.prover_id)?,
                r.partition_index,
                &Base64::inner(&r.vanilla_proofs),
            )?),
            ProofRequest::WinningPost(r) => Box::new(PoStJob::winning(
                r.registered_proof,
                r.randomness.0,
                prover_id(r.miner_id, r.prover_id)?,
                &Base64::inner(&r.vanilla_proofs),
            )?),
        })
    }
}

/// One kind's fields from a JSON object; an error names the field by its path.
fn fields<T: serde::de::DeserializeOwned>(
    members: std::collections::BTreeMap<String, &serde_json::value::RawValue>,
) -> Result<T, CircuitError> {
    let map = serde::de::value::MapDeserializer::<_, serde_json::Error>::new(members.into_iter());
    serde_path_to_error::deserialize(map).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // A missing field is reported at its parent: name the field itself.
        let missing = inner
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next());
        let field = match (missing, path.as_str()) {
            (Some(name), ".") => name.to_owned(),
            (Some(name), parent) => format!("{parent}.{name}"),
            (None, ".") => "request".into(),
            (None, _) => path,
        };
        CircuitError::invalid(field, inner)
    })
}

/// The C1 output inside a PoRep request.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum C1Input {
    /// Base64 of the C1 JSON (or envelope) bytes.
    Base64(String),
    /// The C1 JSON (or envelope) itself, as its text (parsed once, into its own types, when
    /// the job is prepared).
    Json(Box<serde_json::value::RawValue>),
}

impl C1Input {
    /// The C1 output `c1` as JSON.
    pub fn json<T: Serialize>(c1: &T) -> Result<C1Input, serde_json::Error> {
        serde_json::value::to_raw_value(c1).map(C1Input::Json)
    }

    fn to_bytes(&self) -> Result<std::borrow::Cow<'_, [u8]>, CircuitError> {
        match self {
            C1Input::Base64(s) => base64::engine::general_purpose::STANDARD
                .decode(s.trim())
                .map(std::borrow::Cow::Owned)
                .map_err(|e| CircuitError::invalid("c1", format!("not base64: {e}"))),
            C1Input::Json(raw) => Ok(std::borrow::Cow::Borrowed(raw.get().as_bytes())),
        }
    }
}

impl PartialEq for C1Input {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (C1Input::Base64(a), C1Input::Base64(b)) => a == b,
            (C1Input::Json(a), C1Input::Json(b)) => a.get() == b.get(),
            _ => false,
        }
    }
}

/// A string is base64; anything else is the JSON itself, kept as its text.
impl<'de> Deserialize<'de> for C1Input {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        match raw.get().starts_with('"') {
            true => serde_json::from_str(raw.get())
                .map(C1Input::Base64)
                .map_err(serde::de::Error::custom),
            false => Ok(C1Input::Json(raw)),
        }
    }
}

/// Bytes carried as base64 in JSON.
#[derive(Clone, PartialEq, Eq)]
pub struct Base64(pub Vec<u8>);

impl Base64 {
    fn inner(list: &[Base64]) -> Vec<&[u8]> {
        list.iter().map(|b| b.0.as_slice()).collect()
    }
}

impl fmt::Debug for Base64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Base64({} bytes)", self.0.len())
    }
}

impl Serialize for Base64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .map(Base64)
            .map_err(|e| serde::de::Error::custom(format!("not base64: {e}")))
    }
}

/// A 32-byte value: hex (64 digits) or base64 in JSON, or an array of 32 numbers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Bytes32(pub [u8; 32]);

impl fmt::Debug for Bytes32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

impl Serialize for Bytes32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Array(Vec<u8>),
        }
        let raw = Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom("expected 32 bytes: 64 hex digits, base64, or 32 numbers")
        })?;
        let bytes = match raw {
            Raw::Array(v) => v,
            Raw::Text(s) => parse_text_bytes(s.trim()).map_err(serde::de::Error::custom)?,
        };
        <[u8; 32]>::try_from(bytes.as_slice())
            .map(Bytes32)
            .map_err(|_| serde::de::Error::custom(format!("{} bytes, expected 32", bytes.len())))
    }
}

fn parse_text_bytes(s: &str) -> Result<Vec<u8>, String> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok((0..32)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("checked hex"))
            .collect());
    }
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|_| "neither 64 hex digits nor base64".to_owned())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(json: &str) -> String {
        match ProofRequest::from_json(json.as_bytes()) {
            Err(CircuitError::InvalidInput { field, .. }) => field,
            other => panic!("expected an invalid-input error, got {other:?}"),
        }
    }

    const RANDOMNESS: &str = "0101010101010101010101010101010101010101010101010101010101010100";

    #[test]
    fn requests_round_trip_through_json() {
        let req = ProofRequest::WindowPost(WindowPostRequest {
            registered_proof: RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
            randomness: Bytes32([7; 32]),
            miner_id: Some(1000),
            prover_id: None,
            partition_index: 3,
            vanilla_proofs: vec![Base64(vec![1, 2, 3])],
        });
        let json = serde_json::to_vec(&req).unwrap();
        let text = String::from_utf8(json.clone()).unwrap();
        assert!(text.contains(r#""kind":"window-post""#), "{text}");
        assert!(text.contains(r#""miner_id":1000"#), "{text}");
        assert_eq!(ProofRequest::from_json(&json).unwrap(), req);
    }

    #[test]
    fn bad_fields_are_named() {
        let winning = |extra: &str| {
            format!(
                r#"{{"kind":"winning-post","registered_proof":"StackedDrgWinning2KiBV1",
                "randomness":"{RANDOMNESS}","miner_id":1000,"vanilla_proofs":["AAEC"]{extra}}}"#
            )
        };
        assert!(ProofRequest::from_json(winning("").as_bytes()).is_ok());
        assert_eq!(field_of(&winning(r#","bogus":1"#)), "bogus");
        assert_eq!(
            field_of(&winning("").replace("AAEC", "not base64!")),
            "vanilla_proofs[0]"
        );
        assert_eq!(
            field_of(&winning("").replace(RANDOMNESS, "abcd")),
            "randomness"
        );
        assert_eq!(
            field_of(&winning("").replace("StackedDrgWinning2KiBV1", "StackedDrgWinning3KiBV1")),
            "registered_proof"
        );
        assert_eq!(field_of(r#"{"kind":"teleport"}"#), "kind");
        assert_eq!(field_of(r#"{"miner_id":1}"#), "kind");
        assert_eq!(field_of(r#"{"kind":"winning-post"}"#), "registered_proof");
        assert_eq!(field_of("[1,2"), "request");
    }

    #[test]
    fn bytes32_accepts_hex_base64_and_arrays() {
        let parse = |v: serde_json::Value| serde_json::from_value::<Bytes32>(v).map(|b| b.0);
        let hex_form = serde_json::json!(RANDOMNESS);
        let b64 = base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
        assert_eq!(parse(hex_form).unwrap()[31], 0);
        assert_eq!(parse(serde_json::json!(b64)).unwrap(), [1; 32]);
        assert_eq!(parse(serde_json::json!(vec![9u8; 32])).unwrap(), [9; 32]);
        assert!(parse(serde_json::json!(vec![9u8; 31])).is_err());
        assert!(parse(serde_json::json!("zz")).is_err());
    }
}
