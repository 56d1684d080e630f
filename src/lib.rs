//! cuzk-appliance: a Groth16 proving appliance for Filecoin storage providers.
//!
//! The pipeline, folder by folder:
//! - [`circuits`]: Filecoin proof kinds; inputs as Curio holds them -> one circuit per partition,
//!   partition proofs -> the bytes filecoin-proofs returns (verified before they leave).
//! - [`synth`]: circuit -> [`synth::SynthesizedProof`], the narrow waist every path goes through.
//! - [`pce`]: a circuit kind's recorded R1CS matrices: witness-only synthesis + SpMV, the same
//!   SynthesizedProof faster.
//! - [`srs`]: Groth16 parameter files -> decoded bases.
//! - [`groth16`]: SynthesizedProof + SRS -> proof, behind a [`groth16::Backend`]: CPU, or GPU
//!   ([`gpu`]: devices and our NVRTC-compiled kernels).
//! - [`persist`]: the one way durable files are written.
//! - [`cli`]: the `cuzk` command.
//!
//! docs/architecture.md has the bird's-eye view and the invariants.

pub mod api;
pub mod circuits;
pub mod cli;
pub mod config;
pub mod engine;
pub mod gpu;
pub mod groth16;
pub mod jobs;
pub mod memory;
pub mod metrics;
pub mod pce;
pub mod persist;
pub mod srs;
pub mod synth;
pub mod systemd;
