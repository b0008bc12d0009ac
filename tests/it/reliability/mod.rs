//! Bounds and failures: injected faults, hostile code, limits, properties, fuzz seeds, tenants, logs.

pub(crate) mod faults;
pub(crate) mod fuzz_seeds;
pub(crate) mod hostile;
pub(crate) mod limits;
pub(crate) mod logs;
pub(crate) mod properties;
pub(crate) mod tenancy;
