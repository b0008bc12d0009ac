//! Plumbing the store backends share: the AWS side (table definitions,
//! clients, `setup`) used by the DynamoDB and S3 stores, and the embedded
//! redb database that the local session and metadata stores open together.

pub mod aws;
pub mod content;
pub mod embedded;
pub(crate) mod s3;
