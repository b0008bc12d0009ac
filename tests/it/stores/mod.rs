//! The stores behind the seams: heaps, metadata, sessions, on disk and on AWS (moto), with IAM enforced.

pub(crate) mod aws_backends;
pub(crate) mod aws_calls;
pub(crate) mod heap_store;
pub(crate) mod iam;
pub(crate) mod meta_store;
pub(crate) mod session_store;
pub(crate) mod work_expiry;
