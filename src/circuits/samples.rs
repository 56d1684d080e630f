//! Sample jobs made with filecoin-proofs itself, as Curio would make them: small sectors sealed
//! (PC1, PC2, C1), updated (SnapDeals encode + vanilla partition proofs) and challenged (PoSt
//! vanilla proofs). Tests and benchmarks prove these; the proving path never uses this module.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    SealCommitPhase1Output,
};
use filecoin_proofs_api::{
    PaddedBytesAmount, PrivateReplicaInfo, RegisteredPoStProof, RegisteredSealProof,
    RegisteredUpdateProof, SectorId, UnpaddedBytesAmount,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::prover_id_from_miner;
use super::request::{
    Base64, Bytes32, PorepC2Request, ProofRequest, SnapDealsRequest, WindowPostRequest,
    WinningPostRequest,
};
use super::ProofKind;

/// A sealed sector on disk: its C1 output and what PoSt and SnapDeals read.
#[derive(Clone, Debug)]
pub struct SealedSector {
    pub proof: RegisteredSealProof,
    pub sector_id: SectorId,
    pub c1: SealCommitPhase1Output,
    pub comm_r: [u8; 32],
    pub cache: PathBuf,
    pub sealed: PathBuf,
}

/// Seals a sector of random data under `workdir` and returns its C1 output. `seed` fixes the
/// data, ticket and interactive seed.
pub fn seal_sector(
    proof: RegisteredSealProof,
    miner_id: u64,
    sector_number: u64,
    seed: u64,
    workdir: &Path,
) -> Result<SealCommitPhase1Output> {
    Ok(seal(proof, miner_id, sector_number, seed, false, workdir)?.c1)
}

/// Seals a sector under `workdir`: random data, or all zeros for a committed-capacity sector
/// (the sector key SnapDeals updates).
pub fn seal(
    proof: RegisteredSealProof,
    miner_id: u64,
    sector_number: u64,
    seed: u64,
    committed_capacity: bool,
    workdir: &Path,
) -> Result<SealedSector> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let sector_size = u64::from(proof.sector_size());
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));
    let data: Vec<u8> = if committed_capacity {
        vec![0; u64::from(unpadded) as usize]
    } else {
        (0..u64::from(unpadded)).map(|_| rng.gen()).collect()
    };

    let cache = workdir.join("cache");
    std::fs::create_dir_all(&cache)?;
    let staged = workdir.join("staged");
    let sealed = workdir.join("sealed");
    let mut staged_bytes = Cursor::new(Vec::new());
    let (piece, _) = add_piece(proof, Cursor::new(&data), &mut staged_bytes, unpadded, &[])
        .context("add_piece")?;
    std::fs::write(&staged, staged_bytes.into_inner())?;
    std::fs::write(&sealed, [])?;

    let prover_id = prover_id_from_miner(miner_id);
    let sector_id = SectorId::from(sector_number);
    let mut ticket: [u8; 32] = rng.gen();
    ticket[31] &= 0x3f;
    let mut interactive_seed: [u8; 32] = rng.gen();
    interactive_seed[31] &= 0x3f;

    let pieces = [piece];
    let pc1 = seal_pre_commit_phase1(
        proof, &cache, &staged, &sealed, prover_id, sector_id, ticket, &pieces,
    )
    .context("seal_pre_commit_phase1")?;
    let pc2 = seal_pre_commit_phase2(pc1, &cache, &sealed).context("seal_pre_commit_phase2")?;
    let comm_r = pc2.comm_r;
    let c1 = seal_commit_phase1(
        &cache,
        &sealed,
        prover_id,
        sector_id,
        ticket,
        interactive_seed,
        pc2,
        &pieces,
    )
    .context("seal_commit_phase1")?;
    Ok(SealedSector {
        proof,
        sector_id,
        c1,
        comm_r,
        cache,
        sealed,
    })
}

/// The PoSt proof types (winning, window v1.2) of a sealed sector's size.
pub fn post_proofs(
    seal: RegisteredSealProof,
) -> Result<(RegisteredPoStProof, RegisteredPoStProof)> {
    use RegisteredPoStProof::*;
    Ok(match u64::from(seal.sector_size()) {
        2048 => (StackedDrgWinning2KiBV1, StackedDrgWindow2KiBV1_2),
        0x80_0000 => (StackedDrgWinning8MiBV1, StackedDrgWindow8MiBV1_2),
        0x2000_0000 => (StackedDrgWinning512MiBV1, StackedDrgWindow512MiBV1_2),
        0x8_0000_0000 => (StackedDrgWinning32GiBV1, StackedDrgWindow32GiBV1_2),
        0x10_0000_0000 => (StackedDrgWinning64GiBV1, StackedDrgWindow64GiBV1_2),
        other => bail!("no PoSt proof for sector size {other}"),
    })
}

/// The SnapDeals proof type of a sealed sector's size.
pub fn update_proof(seal: RegisteredSealProof) -> Result<RegisteredUpdateProof> {
    use RegisteredUpdateProof::*;
    Ok(match u64::from(seal.sector_size()) {
        2048 => StackedDrg2KiBV1,
        0x80_0000 => StackedDrg8MiBV1,
        0x2000_0000 => StackedDrg512MiBV1,
        0x8_0000_0000 => StackedDrg32GiBV1,
        0x10_0000_0000 => StackedDrg64GiBV1,
        other => bail!("no SnapDeals proof for sector size {other}"),
    })
}

/// PoSt randomness from a seed, with the top bits cleared as the chain's randomness is.
pub fn randomness(seed: u64) -> [u8; 32] {
    let mut r: [u8; 32] = ChaCha8Rng::seed_from_u64(seed).gen();
    r[31] &= 0x3f;
    r
}

fn private_replica(
    sector: &SealedSector,
    proof: RegisteredPoStProof,
) -> (SectorId, PrivateReplicaInfo) {
    (
        sector.sector_id,
        PrivateReplicaInfo::new(
            proof,
            sector.comm_r,
            sector.cache.clone(),
            sector.sealed.clone(),
        ),
    )
}

/// The per-sector vanilla proofs of a WindowPoSt over `sectors` (in sector-id order), as Curio
/// makes them: challenges for every sector, then one vanilla proof per sector.
pub fn window_post_vanilla(
    sectors: &[SealedSector],
    proof: RegisteredPoStProof,
    miner_id: u64,
    randomness: [u8; 32],
) -> Result<Vec<Vec<u8>>> {
    let replicas: BTreeMap<_, _> = sectors.iter().map(|s| private_replica(s, proof)).collect();
    let ids: Vec<SectorId> = replicas.keys().copied().collect();
    let challenges = filecoin_proofs_api::post::generate_fallback_sector_challenges(
        proof,
        &randomness,
        &ids,
        prover_id_from_miner(miner_id),
    )?;
    let vanilla = replicas
        .iter()
        .map(|(id, replica)| {
            filecoin_proofs_api::post::generate_single_vanilla_proof(
                proof,
                *id,
                replica,
                &challenges[id],
            )
        })
        .collect::<Result<_>>()?;
    Ok(vanilla)
}

/// A WindowPoSt request for partition `partition_index` of a WindowPoSt over `sectors`.
pub fn window_post_request(
    sectors: &[SealedSector],
    proof: RegisteredPoStProof,
    miner_id: u64,
    randomness: [u8; 32],
    partition_index: usize,
) -> Result<ProofRequest> {
    let vanilla = window_post_vanilla(sectors, proof, miner_id, randomness)?;
    let per_partition = proof.as_v1_config().sector_count;
    let chunk = vanilla
        .chunks(per_partition)
        .nth(partition_index)
        .context("partition index beyond the sectors")?;
    Ok(ProofRequest::WindowPost(WindowPostRequest {
        registered_proof: proof,
        randomness: Bytes32(randomness),
        miner_id: Some(miner_id),
        prover_id: None,
        partition_index,
        vanilla_proofs: chunk.iter().cloned().map(Base64).collect(),
    }))
}

/// A WinningPoSt request over `sectors`: the challenged sector chosen as the chain would.
pub fn winning_post_request(
    sectors: &[SealedSector],
    miner_id: u64,
    randomness: [u8; 32],
) -> Result<ProofRequest> {
    let (proof, _) = post_proofs(sectors[0].proof)?;
    let prover_id = prover_id_from_miner(miner_id);
    let chosen = filecoin_proofs_api::post::generate_winning_post_sector_challenge(
        proof,
        &randomness,
        sectors.len() as u64,
        prover_id,
    )?;
    let mut vanilla = Vec::new();
    for index in chosen {
        let (id, replica) = private_replica(&sectors[index as usize], proof);
        let challenges = filecoin_proofs_api::post::generate_fallback_sector_challenges(
            proof,
            &randomness,
            &[id],
            prover_id,
        )?;
        vanilla.push(Base64(
            filecoin_proofs_api::post::generate_single_vanilla_proof(
                proof,
                id,
                &replica,
                &challenges[&id],
            )?,
        ));
    }
    Ok(ProofRequest::WinningPost(WinningPostRequest {
        registered_proof: proof,
        randomness: Bytes32(randomness),
        miner_id: Some(miner_id),
        prover_id: None,
        vanilla_proofs: vanilla,
    }))
}

/// A SnapDeals request: random new data encoded into the committed-capacity sector `cc`
/// (sealed with `committed_capacity`), and the vanilla partition proofs of the update.
pub fn snap_request(cc: &SealedSector, seed: u64, workdir: &Path) -> Result<ProofRequest> {
    let proof = update_proof(cc.proof)?;
    let sector_size = u64::from(cc.proof.sector_size());
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let data: Vec<u8> = (0..u64::from(unpadded)).map(|_| rng.gen()).collect();
    let mut staged_bytes = Cursor::new(Vec::new());
    let (piece, _) = add_piece(
        cc.proof,
        Cursor::new(&data),
        &mut staged_bytes,
        unpadded,
        &[],
    )
    .context("add_piece")?;
    let staged = workdir.join("update-staged");
    std::fs::write(&staged, staged_bytes.into_inner())?;
    let replica = workdir.join("update-sealed");
    std::fs::File::create(&replica)?.set_len(sector_size)?;
    let cache = workdir.join("update-cache");
    std::fs::create_dir_all(&cache)?;

    let encoded = filecoin_proofs_api::update::empty_sector_update_encode_into(
        proof,
        &replica,
        &cache,
        &cc.sealed,
        &cc.cache,
        &staged,
        &[piece],
    )
    .context("empty_sector_update_encode_into")?;
    let partitions = filecoin_proofs_api::update::generate_partition_proofs(
        proof,
        cc.comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &cc.sealed,
        &cc.cache,
        &replica,
        &cache,
    )
    .context("generate_partition_proofs")?;
    Ok(ProofRequest::SnapDeals(SnapDealsRequest {
        registered_proof: proof,
        vanilla_proofs: partitions.into_iter().map(|p| Base64(p.0)).collect(),
        comm_r_old: Bytes32(cc.comm_r),
        comm_r_new: Bytes32(encoded.comm_r_new),
        comm_d_new: Bytes32(encoded.comm_d_new),
    }))
}

/// A PoRep C2 request for a sealed sector.
pub fn porep_request(sector: &SealedSector, miner_id: u64) -> ProofRequest {
    ProofRequest::PorepC2(PorepC2Request {
        c1: super::request::C1Input::json(&sector.c1).expect("C1 output serializes"),
        miner_id,
        sector_number: u64::from(sector.sector_id),
    })
}

/// One sample request of `kind` at `proof`'s sector size, made from scratch under `workdir`
/// (sealing what it needs). WindowPoSt covers two partitions' worth of sectors and asks for the
/// last partition.
pub fn sample_request(
    kind: ProofKind,
    proof: RegisteredSealProof,
    miner_id: u64,
    workdir: &Path,
) -> Result<ProofRequest> {
    let sector = |n: u64, cc: bool| -> Result<SealedSector> {
        let dir = workdir.join(format!("sector-{n}"));
        std::fs::create_dir_all(&dir)?;
        seal(proof, miner_id, n, n, cc, &dir)
    };
    match kind {
        ProofKind::PorepC2 => Ok(porep_request(&sector(1, false)?, miner_id)),
        ProofKind::SnapDeals => snap_request(&sector(1, true)?, 2, workdir),
        ProofKind::WinningPost => {
            winning_post_request(&[sector(1, false)?], miner_id, randomness(3))
        }
        ProofKind::WindowPost => {
            let (_, window) = post_proofs(proof)?;
            let per_partition = window.as_v1_config().sector_count as u64;
            let sectors = (1..=per_partition + 1)
                .map(|n| sector(n, false))
                .collect::<Result<Vec<_>>>()?;
            window_post_request(&sectors, window, miner_id, randomness(4), 1)
        }
    }
}
