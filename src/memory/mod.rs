//! Memory: how many bytes the appliance may hold ([`Budget`], from the cgroup it runs under or
//! the machine), and the only way to hold them ([`Admission`]): every large buffer is allocated
//! under a [`Reservation`] (a partition) or a [`Hold`] (a loaded set, a PCE extraction) taken
//! before it exists, in the order the pure [`dispatch::Dispatcher`] decides (budget and depth,
//! priority then FIFO). [`PinnedPool`]: the page-locked region partitions' vectors are lent
//! from.

mod admission;
mod budget;
pub mod dispatch;
mod pinned;

pub use admission::{
    Admission, HeldBytes, Hold, MemoryStatus, Purpose, Refused, Reservation, CANCEL_POLL,
};
pub use budget::{Budget, BudgetSource, System};
pub use pinned::{memlock_limit, Lease, PinError, PinnedPool, PoolStatus, Taken, GRANULE};
