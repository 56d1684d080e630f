//! Rehearsal inputs: PoRep C1 outputs, SnapDeals updates and WindowPoSt partitions of any sector
//! size, 32 GiB and 64 GiB included, that no test box could seal (hours of PC1, hundreds of GB
//! of layers), made in seconds. SnapDeals and WindowPoSt are described at their builders; what
//! follows is the PoRep's.
//!
//! The sector a C1 output opens is a committed-capacity sector (all data zeros) whose labels exist
//! only where a challenge looks: every challenged node and every parent of one. The parents'
//! labels are random; a challenged node's labels are computed from its parents' as sealing
//! computes them (layer by layer, SHA-256 over the replica id, layer, node and parents); its
//! replica node is its last label plus its data (zero), the key the encoding proof opens. The
//! three trees (data, columns, replica) are sparse: a node no opening reaches holds the tree's
//! default (zero leaves and the hashes of all-default subtrees), every other node is hashed
//! from its children as the real tree would. The Merkle proofs, columns, labeling and encoding
//! proofs therefore pass filecoin-proofs' own vanilla verification and the circuits they make
//! are satisfied, with the production shapes: the real challenges (from the replica id and a
//! random seed), the real DRG and expander parents, full-length paths.
//!
//! What a rehearsal cannot have is real Groth16 parameters at the large sizes; a proof made
//! with a parameter set of random bases does not verify, and the caller says so. Only
//! benchmarks and tests make these inputs: no request parses into one.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, ensure, Context, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::constants::{
    DefaultPieceHasher, DefaultTreeHasher, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB,
    SectorShape64GiB, SectorShape8MiB, SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB,
    SECTOR_SIZE_64_GIB, SECTOR_SIZE_8_MIB,
};
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::types::FallbackPoStSectorProof;
use filecoin_proofs::types::VanillaSealProof as RawVanillaSealProof;
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, SectorId};
use merkletree::hash::Algorithm;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    generate_replica_id, Challenges, Column, ColumnProof, EncodingProof, LabelingProof,
    PublicInputs, ReplicaColumnProof, StackedDrg, TOTAL_PARENTS,
};
use typenum::{Unsigned, U0};

use super::request::{
    Base64, Bytes32, C1Input, PorepC2Request, ProofRequest, SnapDealsRequest, WindowPostRequest,
};

/// A C1 output of `registered_proof`'s sector size for this prover and sector, opening a
/// sector that exists only where its challenges look (see the module). `seed` fixes every
/// random choice: the same seed gives the same bytes.
pub fn porep_c1(
    registered_proof: RegisteredSealProof,
    prover_id: [u8; 32],
    sector_id: SectorId,
    seed: u64,
) -> Result<SealCommitPhase1Output> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let size = u64::from(registered_proof.sector_size());
    let ids = Ids {
        registered_proof,
        prover_id,
        sector_id,
    };
    let (vanilla_proofs, c) = match size {
        SECTOR_SIZE_2_KIB => wrap(sector::<SectorShape2KiB>(&ids, &mut rng)?, |p| {
            VanillaSealProof::StackedDrg2KiBV1(p)
        }),
        SECTOR_SIZE_8_MIB => wrap(sector::<SectorShape8MiB>(&ids, &mut rng)?, |p| {
            VanillaSealProof::StackedDrg8MiBV1(p)
        }),
        SECTOR_SIZE_512_MIB => wrap(sector::<SectorShape512MiB>(&ids, &mut rng)?, |p| {
            VanillaSealProof::StackedDrg512MiBV1(p)
        }),
        SECTOR_SIZE_32_GIB => wrap(sector::<SectorShape32GiB>(&ids, &mut rng)?, |p| {
            VanillaSealProof::StackedDrg32GiBV1(p)
        }),
        SECTOR_SIZE_64_GIB => wrap(sector::<SectorShape64GiB>(&ids, &mut rng)?, |p| {
            VanillaSealProof::StackedDrg64GiBV1(p)
        }),
        other => bail!("no PoRep circuit for {other}-byte sectors"),
    };
    Ok(SealCommitPhase1Output {
        registered_proof,
        vanilla_proofs,
        comm_r: c.comm_r,
        comm_d: c.comm_d,
        replica_id: c.replica_id,
        seed: c.seed,
        ticket: c.ticket,
    })
}

/// The interactive PoRep (V1_1) of a sector size: the seal every rehearsal request is sized by.
fn seal_proof(sector_size: u64) -> Result<RegisteredSealProof> {
    [
        RegisteredSealProof::StackedDrg2KiBV1_1,
        RegisteredSealProof::StackedDrg8MiBV1_1,
        RegisteredSealProof::StackedDrg512MiBV1_1,
        RegisteredSealProof::StackedDrg32GiBV1_1,
        RegisteredSealProof::StackedDrg64GiBV1_1,
    ]
    .into_iter()
    .find(|p| u64::from(p.sector_size()) == sector_size)
    .with_context(|| format!("no PoRep for {sector_size}-byte sectors"))
}

/// A PoRep C2 request (V1_1, interactive) of a rehearsal sector of `sector_size` for this miner
/// and sector, as Curio would send it.
pub fn porep_request(
    sector_size: u64,
    miner_id: u64,
    sector_number: u64,
    seed: u64,
) -> Result<ProofRequest> {
    let registered_proof = seal_proof(sector_size)?;
    let c1 = porep_c1(
        registered_proof,
        super::prover_id_from_miner(miner_id),
        SectorId::from(sector_number),
        seed,
    )?;
    Ok(ProofRequest::PorepC2(PorepC2Request {
        c1: C1Input::json(&c1)?,
        miner_id,
        sector_number,
    }))
}

/// A WindowPoSt request for partition `partition_index` of a rehearsal PoSt (window v1.2) of
/// `sector_size`: a full partition of sectors (ids from partition_index · sectors + 1), each
/// existing only where its challenges look: a random comm_c, a replica tree with random leaves
/// at the challenged nodes and default ones elsewhere (sparse), comm_r = H(comm_c, comm_r_last).
/// The challenges are filecoin-proofs' own for the randomness, prover and sector.
pub fn window_post_request(
    sector_size: u64,
    miner_id: u64,
    partition_index: usize,
    seed: u64,
) -> Result<ProofRequest> {
    let (_, registered_proof) = super::samples::post_proofs(seal_proof(sector_size)?)?;
    let randomness = super::samples::randomness(seed);
    type Sectors = fn(RegisteredPoStProof, u64, usize, &[u8; 32], u64) -> Result<Vec<Vec<u8>>>;
    let sectors: Sectors = match sector_size {
        SECTOR_SIZE_2_KIB => post_sectors::<SectorShape2KiB>,
        SECTOR_SIZE_8_MIB => post_sectors::<SectorShape8MiB>,
        SECTOR_SIZE_512_MIB => post_sectors::<SectorShape512MiB>,
        SECTOR_SIZE_32_GIB => post_sectors::<SectorShape32GiB>,
        _ => post_sectors::<SectorShape64GiB>,
    };
    let vanilla = sectors(
        registered_proof,
        miner_id,
        partition_index,
        &randomness,
        seed,
    )?;
    Ok(ProofRequest::WindowPost(WindowPostRequest {
        registered_proof,
        randomness: Bytes32(randomness),
        miner_id: Some(miner_id),
        prover_id: None,
        partition_index,
        vanilla_proofs: vanilla.into_iter().map(Base64).collect(),
    }))
}

/// The bincode `FallbackPoStSectorProof`s of one WindowPoSt partition's rehearsal sectors.
fn post_sectors<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    registered_proof: RegisteredPoStProof,
    miner_id: u64,
    partition_index: usize,
    randomness: &[u8; 32],
    seed: u64,
) -> Result<Vec<Vec<u8>>> {
    let count = registered_proof.as_v1_config().sector_count;
    let first = (partition_index * count) as u64 + 1;
    let ids: Vec<SectorId> = (first..first + count as u64).map(SectorId::from).collect();
    let challenges = filecoin_proofs_api::post::generate_fallback_sector_challenges(
        registered_proof,
        randomness,
        &ids,
        super::prover_id_from_miner(miner_id),
    )?;
    let nodes = u64::from(registered_proof.sector_size()) as usize / 32;
    let shape = Shape::of_tree::<Tree>(nodes)?;
    ids.par_iter()
        .map(|id| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ u64::from(*id).rotate_left(32));
            let challenged = &challenges[id];
            let leaves: BTreeMap<u64, _> = challenged
                .iter()
                .map(|&c| (c, <DefaultTreeHasher as Hasher>::Domain::random(&mut rng)))
                .collect();
            let tree = SparseTree::<DefaultTreeHasher>::new(nodes, shape.clone(), &leaves)?;
            let comm_c = <DefaultTreeHasher as Hasher>::Domain::random(&mut rng);
            let comm_r_last = tree.root();
            let inclusion_proofs = challenged
                .iter()
                .map(|&c| tree.proof(c))
                .collect::<Result<Vec<_>>>()?;
            let proof = FallbackPoStSectorProof::<Tree> {
                sector_id: *id,
                comm_r: <DefaultTreeHasher as Hasher>::Function::hash2(&comm_c, &comm_r_last),
                vanilla_proof: storage_proofs_post::fallback::Proof {
                    sectors: vec![storage_proofs_post::fallback::SectorProof {
                        inclusion_proofs,
                        comm_c,
                        comm_r_last,
                    }],
                },
            };
            Ok(bincode::serialize(&proof)?)
        })
        .collect()
}

/// A SnapDeals request of a rehearsal update of `sector_size`: an old replica and new data that
/// exist only at a few thousand random nodes (the rest zero: an update of zeros into zeros holds
/// everywhere else), the new replica computed there as the update encodes it (new = old + data ·
/// rho, rho from the commitments and the node's high bits), every tree sparse. The challenges
/// are storage-proofs' own for comm_r_new; a challenge lands on a zero node unless it hits one of
/// the random ones, which changes the values the circuit hashes, not its work.
pub fn snap_deals_request(sector_size: u64, seed: u64) -> Result<ProofRequest> {
    let registered_proof = super::samples::update_proof(seal_proof(sector_size)?)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let u = match sector_size {
        SECTOR_SIZE_2_KIB => update::<SectorShape2KiB>(sector_size, &mut rng)?,
        SECTOR_SIZE_8_MIB => update::<SectorShape8MiB>(sector_size, &mut rng)?,
        SECTOR_SIZE_512_MIB => update::<SectorShape512MiB>(sector_size, &mut rng)?,
        SECTOR_SIZE_32_GIB => update::<SectorShape32GiB>(sector_size, &mut rng)?,
        _ => update::<SectorShape64GiB>(sector_size, &mut rng)?,
    };
    Ok(ProofRequest::SnapDeals(SnapDealsRequest {
        registered_proof,
        vanilla_proofs: u.proofs.into_iter().map(Base64).collect(),
        comm_r_old: Bytes32(u.comm_r_old),
        comm_r_new: Bytes32(u.comm_r_new),
        comm_d_new: Bytes32(u.comm_d_new),
    }))
}

/// A rehearsal update: its bincode `PartitionProof`s and commitments.
struct Update {
    proofs: Vec<Vec<u8>>,
    comm_r_old: [u8; 32],
    comm_r_new: [u8; 32],
    comm_d_new: [u8; 32],
}

fn update<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    sector_size: u64,
    rng: &mut ChaCha8Rng,
) -> Result<Update> {
    use storage_proofs_update::constants::{h_default, TreeDHasher};
    use storage_proofs_update::vanilla::{phi, rho, ChallengeProof, PartitionProof, PublicParams};
    type R = DefaultTreeHasher;
    let pp = PublicParams::from_sector_size(sector_size);
    let nodes = pp.sector_nodes;
    let touched: BTreeSet<u64> = (0..(nodes as u64).min(4096))
        .map(|_| rng.gen_range(0..nodes as u64))
        .collect();
    let d_new: BTreeMap<u64, _> = touched
        .iter()
        .map(|&i| (i, <TreeDHasher as Hasher>::Domain::random(rng)))
        .collect();
    let r_old: BTreeMap<u64, _> = touched
        .iter()
        .map(|&i| (i, <R as Hasher>::Domain::random(rng)))
        .collect();
    let shape = Shape::of_tree::<Tree>(nodes)?;
    let tree_d =
        SparseTree::<TreeDHasher>::new(nodes, Shape::of::<typenum::U2, U0, U0>(nodes)?, &d_new)?;
    let tree_r_old = SparseTree::<R>::new(nodes, shape.clone(), &r_old)?;
    let comm_c = <R as Hasher>::Domain::random(rng);
    let comm_d_new = tree_d.root();
    let comm_r_old = <R as Hasher>::Function::hash2(&comm_c, &tree_r_old.root());
    let phi = phi(&comm_d_new, &comm_r_old);
    let shift = nodes.trailing_zeros() as usize - h_default(nodes);
    let r_new: BTreeMap<u64, _> = touched
        .iter()
        .map(|&i| {
            let (old, data): (Fr, Fr) = (r_old[&i].into(), d_new[&i].into());
            (i, (old + data * rho(&phi, (i >> shift) as u32)).into())
        })
        .collect();
    let tree_r_new = SparseTree::<R>::new(nodes, shape, &r_new)?;
    let comm_r_new = <R as Hasher>::Function::hash2(&comm_c, &tree_r_new.root());
    // Each partition's apex leaves: its share of tree_d's nodes at the apex level.
    let apex_total = (pp.partition_count * pp.apex_leaf_count) as u64;
    let apex_level = nodes.trailing_zeros() as usize - apex_total.trailing_zeros() as usize;
    let proofs = (0..pp.partition_count)
        .map(|k| {
            let first = (k * pp.apex_leaf_count) as u64;
            let challenge_proofs = storage_proofs_update::Challenges::new(nodes, comm_r_new, k)
                .map(|c| {
                    Ok(ChallengeProof::<Tree> {
                        proof_r_old: tree_r_old.proof(c as u64)?,
                        proof_d_new: tree_d.proof(c as u64)?,
                        proof_r_new: tree_r_new.proof(c as u64)?,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let proof = PartitionProof::<Tree> {
                comm_c,
                apex_leafs: (first..first + pp.apex_leaf_count as u64)
                    .map(|i| tree_d.node(apex_level, i))
                    .collect(),
                challenge_proofs,
            };
            Ok(bincode::serialize(&proof)?)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Update {
        proofs,
        comm_r_old: bytes32(comm_r_old),
        comm_r_new: bytes32(comm_r_new),
        comm_d_new: bytes32(comm_d_new),
    })
}

struct Ids {
    registered_proof: RegisteredSealProof,
    prover_id: [u8; 32],
    sector_id: SectorId,
}

/// What a C1 output says of its sector besides the vanilla proofs.
struct Commitments {
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    replica_id: <DefaultTreeHasher as Hasher>::Domain,
    seed: [u8; 32],
    ticket: [u8; 32],
}

type Partitions<Tree> = Vec<Vec<RawVanillaSealProof<Tree>>>;

fn wrap<Tree: MerkleTreeTrait>(
    (proofs, c): (Partitions<Tree>, Commitments),
    variant: impl FnOnce(Partitions<Tree>) -> VanillaSealProof,
) -> (VanillaSealProof, Commitments) {
    (variant(proofs), c)
}

/// The labels of the nodes the proofs open, layer 1 first.
type Labels<D> = BTreeMap<u32, Vec<D>>;

fn sector<Tree>(ids: &Ids, rng: &mut ChaCha8Rng) -> Result<(Partitions<Tree>, Commitments)>
where
    Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>,
{
    let config = ids.registered_proof.as_v1_config();
    let setup = setup_params(&config)?;
    let pp = <StackedDrg<'static, Tree, DefaultPieceHasher> as ProofScheme>::setup(&setup)?;
    ensure!(
        matches!(pp.challenges, Challenges::Interactive(_)),
        "{:?}: only interactive PoRep challenges can be rehearsed",
        ids.registered_proof
    );
    let graph = &pp.graph;
    let nodes = graph.size();
    let layers = pp.num_layers;
    let partitions = usize::from(config.partitions);

    // Committed capacity: every data node is zero, so comm_d is the all-default tree's root.
    let tree_d = SparseTree::<DefaultPieceHasher>::new(
        nodes,
        Shape::of::<typenum::U2, U0, U0>(nodes)?,
        &BTreeMap::new(),
    )?;
    let comm_d = tree_d.root();
    let ticket: [u8; 32] = rng.gen();
    let seed: [u8; 32] = rng.gen();
    let replica_id = generate_replica_id::<Tree::Hasher, _>(
        &ids.prover_id,
        u64::from(ids.sector_id),
        &ticket,
        comm_d,
        &config.porep_id,
    );
    let inputs = PublicInputs::<_, <DefaultPieceHasher as Hasher>::Domain> {
        replica_id,
        seed: Some(seed),
        tau: None,
        k: None,
    };
    let challenges: Vec<Vec<usize>> = (0..partitions)
        .map(|k| inputs.challenges(&pp.challenges, nodes, Some(k)))
        .collect();

    let degree = graph.degree();
    let base_degree = graph.base_graph().degree();
    let mut parents_of = BTreeMap::new();
    for &x in challenges.iter().flatten() {
        let mut parents = vec![0u32; degree];
        graph.parents(x, &mut parents)?;
        parents_of.insert(x as u32, parents);
    }
    let labels = labels::<Tree::Hasher>(&replica_id, layers, base_degree, &parents_of, rng);

    let shape = Shape::of_tree::<Tree>(nodes)?;
    let columns: BTreeMap<u64, _> = labels
        .iter()
        .map(|(&node, rows)| {
            Ok((
                node as u64,
                Column::<Tree::Hasher>::new(node, rows.clone())?
                    .hash()
                    .into(),
            ))
        })
        .collect::<Result<_>>()?;
    let tree_c = SparseTree::<Tree::Hasher>::new(nodes, shape.clone(), &columns)?;
    // A replica node is its key (the last layer's label) plus its data, here zero.
    let replica: BTreeMap<u64, _> = parents_of
        .keys()
        .map(|&x| (x as u64, encode(labels[&x][layers - 1], Default::default())))
        .collect();
    let tree_r = SparseTree::<Tree::Hasher>::new(nodes, shape, &replica)?;
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&tree_c.root(), &tree_r.root());

    type TreeProof<Tree> = MerkleProof<
        <Tree as MerkleTreeTrait>::Hasher,
        <Tree as MerkleTreeTrait>::Arity,
        <Tree as MerkleTreeTrait>::SubTreeArity,
        <Tree as MerkleTreeTrait>::TopTreeArity,
    >;
    let column_proof = |node: u32| -> Result<ColumnProof<TreeProof<Tree>>> {
        ColumnProof::from_column(
            Column::new(node, labels[&node].clone())?,
            tree_c.proof(node as u64)?,
        )
    };
    let proofs = challenges
        .iter()
        .map(|partition| {
            partition
                .iter()
                .map(|&x| {
                    let parents = &parents_of[&(x as u32)];
                    let drg_parents = parents[..base_degree]
                        .iter()
                        .map(|&p| column_proof(p))
                        .collect::<Result<Vec<_>>>()?;
                    let exp_parents = parents[base_degree..]
                        .iter()
                        .map(|&p| column_proof(p))
                        .collect::<Result<Vec<_>>>()?;
                    let labeling_proofs: Vec<_> = (1..=layers)
                        .map(|layer| {
                            LabelingProof::new(
                                layer as u32,
                                x as u64,
                                parent_labels(&labels, parents, base_degree, layer),
                            )
                        })
                        .collect();
                    Ok(RawVanillaSealProof::<Tree> {
                        comm_d_proofs: tree_d.proof(x as u64)?,
                        comm_r_last_proof: tree_r.proof(x as u64)?,
                        replica_column_proofs: ReplicaColumnProof {
                            c_x: column_proof(x as u32)?,
                            drg_parents,
                            exp_parents,
                        },
                        labeling_proofs,
                        encoding_proof: EncodingProof::new(
                            layers as u32,
                            x as u64,
                            parent_labels(&labels, parents, base_degree, layers),
                        ),
                    })
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let commitments = Commitments {
        comm_r: bytes32(comm_r),
        comm_d: bytes32(comm_d),
        replica_id,
        seed,
        ticket,
    };
    Ok((proofs, commitments))
}

/// The labels of every challenged node and every parent of one. Parents that are not
/// challenged get random labels; a challenged node's label at each layer is computed from its
/// parents' (its DRG parents on the same layer, its expander parents on the one below), layer
/// by layer and in node order, which is the order sealing computes them in: a DRG parent is an
/// earlier node, an expander parent is on the layer below.
fn labels<H: Hasher>(
    replica_id: &H::Domain,
    layers: usize,
    base_degree: usize,
    parents_of: &BTreeMap<u32, Vec<u32>>,
    rng: &mut ChaCha8Rng,
) -> Labels<H::Domain> {
    let challenged: BTreeSet<u32> = parents_of.keys().copied().collect();
    let mut labels: Labels<H::Domain> = BTreeMap::new();
    for parents in parents_of.values() {
        for &p in parents {
            if !challenged.contains(&p) {
                labels
                    .entry(p)
                    .or_insert_with(|| (0..layers).map(|_| H::Domain::random(rng)).collect());
            }
        }
    }
    for &x in &challenged {
        labels.insert(x, vec![H::Domain::default(); layers]);
    }
    for layer in 1..=layers {
        for &x in &challenged {
            let parents = parent_labels(&labels, &parents_of[&x], base_degree, layer);
            let label = create_label::<H>(replica_id, layer, x, &parents);
            labels.get_mut(&x).expect("inserted above")[layer - 1] = label;
        }
    }
    labels
}

/// The parent labels a node's label at `layer` hashes, as sealing lays them out: the DRG
/// parents' labels on this layer, from layer 2 on the expander parents' on the layer below,
/// repeated to TOTAL_PARENTS.
fn parent_labels<D: Copy>(
    labels: &Labels<D>,
    parents: &[u32],
    base_degree: usize,
    layer: usize,
) -> Vec<D> {
    let drg = parents[..base_degree].iter().map(|p| labels[p][layer - 1]);
    let used: Vec<D> = if layer == 1 {
        drg.collect()
    } else {
        drg.chain(parents[base_degree..].iter().map(|p| labels[p][layer - 2]))
            .collect()
    };
    used.iter().copied().cycle().take(TOTAL_PARENTS).collect()
}

/// A node's label: SHA-256 of the replica id, the layer (big-endian u32) and the node
/// (big-endian u64) in a 64-byte block, then the parents' labels, its top two bits cleared.
fn create_label<H: Hasher>(
    replica_id: &H::Domain,
    layer: usize,
    node: u32,
    parents: &[H::Domain],
) -> H::Domain {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(AsRef::<[u8]>::as_ref(replica_id));
    block[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
    block[36..44].copy_from_slice(&(node as u64).to_be_bytes());
    let mut hasher = Sha256::new();
    hasher.update(block);
    for p in parents {
        hasher.update(AsRef::<[u8]>::as_ref(p));
    }
    let mut repr: [u8; 32] = hasher.finalize().into();
    repr[31] &= 0b0011_1111;
    H::Domain::from(repr)
}

/// A commitment's 32 bytes.
fn bytes32<D: Domain>(d: D) -> [u8; 32] {
    d.into_bytes()
        .try_into()
        .expect("a domain element is 32 bytes")
}

/// A replica node: its key plus its data, in the field.
fn encode<D: Domain>(key: D, data: D) -> D {
    let key: Fr = key.into();
    (key + Into::<Fr>::into(data)).into()
}

/// A Merkle tree's levels from the leaves up: each level's arity and the height its hash is
/// given (a compound tree's sub-tree and top layers start again at 0, as its proofs do).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Shape {
    levels: Vec<(usize, usize)>,
}

impl Shape {
    /// The shape of a tree of `leaves` with base arity `A`, `S` sub-trees (0: none) under
    /// `T` top-level trees (0: none).
    fn of<A: Unsigned, S: Unsigned, T: Unsigned>(leaves: usize) -> Result<Shape> {
        let (a, s, t) = (A::to_usize(), S::to_usize(), T::to_usize());
        let base = leaves / s.max(1) / t.max(1);
        ensure!(
            base * s.max(1) * t.max(1) == leaves,
            "{leaves} leaves do not split into {s} x {t} sub-trees"
        );
        let mut levels = Vec::new();
        let mut n = 1;
        while n < base {
            levels.push((a, levels.len()));
            n *= a;
        }
        ensure!(n == base, "{base} leaves are not a power of {a}");
        levels.extend([s, t].into_iter().filter(|&k| k > 0).map(|k| (k, 0)));
        Ok(Shape { levels })
    }

    /// The shape of a sector's replica (and column) tree of `leaves`.
    fn of_tree<Tree: MerkleTreeTrait>(leaves: usize) -> Result<Shape> {
        Shape::of::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(leaves)
    }
}

/// A tree whose leaves are the default but for `opened`: each level keeps only the nodes
/// above an opened leaf, every other node is the hash of an all-default subtree.
struct SparseTree<H: Hasher> {
    shape: Shape,
    /// The value of an all-default node at each level (the leaves' first).
    defaults: Vec<H::Domain>,
    /// The nodes above an opened leaf at each level (the leaves first, the root last).
    levels: Vec<BTreeMap<u64, H::Domain>>,
}

impl<H: Hasher> SparseTree<H> {
    fn new(leaves: usize, shape: Shape, opened: &BTreeMap<u64, H::Domain>) -> Result<Self> {
        if let Some((&last, _)) = opened.last_key_value() {
            ensure!(
                last < leaves as u64,
                "leaf {last} is past the tree's {leaves}"
            );
        }
        let mut defaults = vec![H::Domain::default()];
        let mut levels = vec![opened.clone()];
        for &(arity, height) in &shape.levels {
            let (below, default) = (
                levels.last().expect("one level at least"),
                *defaults.last().expect("one default at least"),
            );
            let hash = |children: &[H::Domain]| H::Function::default().multi_node(children, height);
            let parents: BTreeSet<u64> = below.keys().map(|i| i / arity as u64).collect();
            let level = parents
                .into_iter()
                .map(|p| {
                    let children: Vec<_> = (0..arity as u64)
                        .map(|j| {
                            below
                                .get(&(p * arity as u64 + j))
                                .copied()
                                .unwrap_or(default)
                        })
                        .collect();
                    (p, hash(&children))
                })
                .collect();
            defaults.push(hash(&vec![default; arity]));
            levels.push(level);
        }
        Ok(SparseTree {
            shape,
            defaults,
            levels,
        })
    }

    fn node(&self, level: usize, index: u64) -> H::Domain {
        self.levels[level]
            .get(&index)
            .copied()
            .unwrap_or(self.defaults[level])
    }

    fn root(&self) -> H::Domain {
        self.node(self.levels.len() - 1, 0)
    }

    /// The inclusion proof of `leaf`, as filecoin-proofs' trees make it.
    fn proof<A, S, T>(&self, leaf: u64) -> Result<MerkleProof<H, A, S, T>>
    where
        A: 'static + filecoin_hashers::PoseidonArity,
        S: 'static + filecoin_hashers::PoseidonArity,
        T: 'static + filecoin_hashers::PoseidonArity,
    {
        ensure!(
            self.shape == Shape::of::<A, S, T>(self.shape_leaves())?,
            "the proof's arities do not match the tree's"
        );
        // Per level: the siblings in order (this node left out) and this node's position.
        let mut index = leaf;
        let mut steps = Vec::with_capacity(self.shape.levels.len());
        for (level, &(arity, _)) in self.shape.levels.iter().enumerate() {
            let (parent, at) = (index / arity as u64, (index % arity as u64) as usize);
            let siblings: Vec<_> = (0..arity as u64)
                .filter(|&j| j != at as u64)
                .map(|j| self.node(level, parent * arity as u64 + j))
                .collect();
            steps.push((siblings, at));
            index = parent;
        }
        let sections = [S::to_usize(), T::to_usize()]
            .iter()
            .filter(|&&k| k > 0)
            .count();
        let base_levels = steps.len() - sections;
        let base_root = self.node(
            base_levels,
            leaf / (A::to_usize() as u64).pow(base_levels as u32),
        );
        let mut lemma = vec![self.node(0, leaf)];
        let mut path = Vec::new();
        for (siblings, at) in &steps[..base_levels] {
            lemma.extend(siblings);
            path.push(*at);
        }
        lemma.push(base_root);
        let mut proof = merkletree::proof::Proof::<H::Domain, A>::new::<U0, U0>(None, lemma, path)?;
        // The sub-tree level, then the top level: each a proof around the one below.
        for (k, (siblings, at)) in steps[base_levels..].iter().enumerate() {
            let level = base_levels + k + 1;
            let mut lemma = siblings.clone();
            lemma.push(self.node(level, leaf / self.leaves_under(level)));
            let below = Some(Box::new(proof));
            proof = match k {
                0 => merkletree::proof::Proof::new::<U0, S>(below, lemma, vec![*at])?,
                _ => merkletree::proof::Proof::new::<T, S>(below, lemma, vec![*at])?,
            };
        }
        MerkleProof::try_from_proof(proof).context("a rehearsal Merkle proof")
    }

    /// How many leaves one node of `level` covers.
    fn leaves_under(&self, level: usize) -> u64 {
        self.shape.levels[..level]
            .iter()
            .map(|&(a, _)| a as u64)
            .product()
    }

    fn shape_leaves(&self) -> usize {
        self.leaves_under(self.shape.levels.len()) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_proofs_porep::stacked::Tau;

    const PROVER: [u8; 32] = [7; 32];

    /// The C1 output of `proof`'s size and its typed vanilla proofs.
    fn typed<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
        proof: RegisteredSealProof,
        seed: u64,
    ) -> (SealCommitPhase1Output, Partitions<Tree>) {
        let c1 = porep_c1(proof, PROVER, SectorId::from(9), seed).unwrap();
        let json = serde_json::to_value(&c1.vanilla_proofs).unwrap();
        let (_, inner) = json.as_object().unwrap().iter().next().unwrap();
        let proofs = serde_json::from_value(inner.clone()).unwrap();
        (c1, proofs)
    }

    /// filecoin-proofs' vanilla verification of every partition, as verify_seal's public
    /// inputs and parameters set it up.
    fn verifies<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
        c1: &SealCommitPhase1Output,
        proofs: &Partitions<Tree>,
    ) -> bool {
        let config = c1.registered_proof.as_v1_config();
        let pp = <StackedDrg<'static, Tree, DefaultPieceHasher> as ProofScheme>::setup(
            &setup_params(&config).unwrap(),
        )
        .unwrap();
        let inputs = PublicInputs {
            replica_id: c1.replica_id,
            seed: Some(c1.seed),
            tau: Some(Tau {
                comm_d: Domain::try_from_bytes(&c1.comm_d).unwrap(),
                comm_r: Domain::try_from_bytes(&c1.comm_r).unwrap(),
            }),
            k: None,
        };
        assert_eq!(proofs.len(), usize::from(config.partitions));
        StackedDrg::<'static, Tree, DefaultPieceHasher>::verify_all_partitions(&pp, &inputs, proofs)
            .unwrap()
    }

    fn check<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
        proof: RegisteredSealProof,
    ) {
        let (c1, mut proofs) = typed::<Tree>(proof, 1);
        assert!(verifies(&c1, &proofs), "{proof:?}");
        // The challenges' expected path lengths: the sizes' real trees.
        let nodes = u64::from(proof.sector_size()) as usize / 32;
        let first = &proofs[0][0];
        assert_eq!(
            first.comm_d_proofs.path().len(),
            nodes.trailing_zeros() as usize
        );
        assert_eq!(
            first.comm_r_last_proof.path().len(),
            first.comm_r_last_proof.expected_len(nodes),
            "{proof:?}"
        );
        // The same seed, the same bytes; another seed, another sector.
        let again = porep_c1(proof, PROVER, SectorId::from(9), 1).unwrap();
        assert_eq!(
            serde_json::to_vec(&again).unwrap(),
            serde_json::to_vec(&c1).unwrap()
        );
        assert_ne!(
            porep_c1(proof, PROVER, SectorId::from(9), 2)
                .unwrap()
                .comm_r,
            c1.comm_r
        );
        // One label changed on the last challenge: that proof no longer verifies.
        let last = proofs.last_mut().unwrap().last_mut().unwrap();
        let mut json = serde_json::to_value(&last.labeling_proofs[0]).unwrap();
        json["parents"][0] =
            serde_json::to_value(<DefaultTreeHasher as Hasher>::Domain::default()).unwrap();
        last.labeling_proofs[0] = serde_json::from_value(json).unwrap();
        assert!(!verifies(&c1, &proofs), "{proof:?}: a wrong label verified");
    }

    #[test]
    fn rehearsal_c1s_of_every_size_pass_filecoin_proofs_vanilla_verification() {
        check::<SectorShape2KiB>(RegisteredSealProof::StackedDrg2KiBV1_1);
        check::<SectorShape8MiB>(RegisteredSealProof::StackedDrg8MiBV1_1);
        check::<SectorShape512MiB>(RegisteredSealProof::StackedDrg512MiBV1_1);
        check::<SectorShape32GiB>(RegisteredSealProof::StackedDrg32GiBV1_1);
        check::<SectorShape64GiB>(RegisteredSealProof::StackedDrg64GiBV1_1);
    }

    /// storage-proofs-update's vanilla verification of every partition of a rehearsal update.
    fn update_verifies<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(size: u64) {
        use storage_proofs_update::vanilla::{EmptySectorUpdate, PartitionProof, PublicInputs};
        let ProofRequest::SnapDeals(r) = snap_deals_request(size, 5).unwrap() else {
            unreachable!()
        };
        let pp = storage_proofs_update::vanilla::PublicParams::from_sector_size(size);
        let mut proofs: Vec<PartitionProof<Tree>> = r
            .vanilla_proofs
            .iter()
            .map(|b| bincode::deserialize(&b.0).unwrap())
            .collect();
        assert_eq!(proofs.len(), pp.partition_count);
        let inputs = PublicInputs {
            k: 0,
            comm_r_old: Domain::try_from_bytes(&r.comm_r_old.0).unwrap(),
            comm_d_new: Domain::try_from_bytes(&r.comm_d_new.0).unwrap(),
            comm_r_new: Domain::try_from_bytes(&r.comm_r_new.0).unwrap(),
            h: storage_proofs_update::constants::h_default(pp.sector_nodes),
        };
        let verify = |proofs: &[PartitionProof<Tree>]| {
            <EmptySectorUpdate<Tree> as ProofScheme>::verify_all_partitions(&pp, &inputs, proofs)
                .unwrap()
        };
        assert!(verify(&proofs), "{size}");
        proofs[0].apex_leafs[0] = Default::default();
        assert!(!verify(&proofs), "{size}: a wrong apex leaf verified");
    }

    #[test]
    fn rehearsal_updates_of_every_size_pass_storage_proofs_vanilla_verification() {
        update_verifies::<SectorShape2KiB>(SECTOR_SIZE_2_KIB);
        update_verifies::<SectorShape8MiB>(SECTOR_SIZE_8_MIB);
        update_verifies::<SectorShape512MiB>(SECTOR_SIZE_512_MIB);
        update_verifies::<SectorShape32GiB>(SECTOR_SIZE_32_GIB);
        update_verifies::<SectorShape64GiB>(SECTOR_SIZE_64_GIB);
    }

    #[test]
    fn a_sparse_trees_root_is_the_dense_trees() {
        // The 32 GiB tree's shape in small: 8 sub-trees of 8 leaves each, 8-ary.
        let shape = Shape::of::<typenum::U8, typenum::U8, U0>(64).unwrap();
        assert_eq!(shape.levels, [(8, 0), (8, 0)]);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let leaves: Vec<_> = (0..64)
            .map(|i| match i % 5 {
                0 => <DefaultTreeHasher as Hasher>::Domain::random(&mut rng),
                _ => Default::default(),
            })
            .collect();
        let opened: BTreeMap<u64, _> = leaves
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 5 == 0)
            .map(|(i, v)| (i as u64, *v))
            .collect();
        let sparse = SparseTree::<DefaultTreeHasher>::new(64, shape, &opened).unwrap();
        // Dense: every node hashed from its children.
        let hash = |c: &[_]| <DefaultTreeHasher as Hasher>::Function::default().multi_node(c, 0);
        let subs: Vec<_> = leaves.chunks(8).map(hash).collect();
        assert_eq!(sparse.root(), hash(&subs));
        for leaf in [0u64, 1, 17, 63] {
            let proof = sparse.proof::<typenum::U8, typenum::U8, U0>(leaf).unwrap();
            assert!(
                proof.verify() && proof.proves_challenge(leaf as usize),
                "{leaf}"
            );
            assert_eq!(proof.root(), sparse.root());
        }
        assert!(SparseTree::<DefaultTreeHasher>::new(
            64,
            Shape::of::<typenum::U8, U0, U0>(64).unwrap(),
            &BTreeMap::from([(64, Default::default())])
        )
        .is_err());
        assert!(Shape::of::<typenum::U8, U0, U0>(32).is_err());
    }
}
