//! What crosses an engine worker's pipes: frames of a little-endian `u32`
//! length, a JSON header of that length, then raw byte sections whose
//! lengths the header gives (a heap's payload, files, `display()` bytes).
//! The worker reads with blocking I/O on its runner thread; the server
//! reads with Tokio, so a run costs it no thread while the worker works.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::engine::control::RunControl;
use crate::engine::outcome::{RunError, RunStatus};
use crate::engine::run::{CodeHandling, Job, JobResult};
use crate::engine::web;

/// The largest header either side reads. Every part of one is bounded far
/// below it (code, console output and the result by their caps, which the
/// worker applies before it writes); a larger length means the stream is
/// not ours.
pub(super) const MAX_HEADER_BYTES: usize = 64 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
pub(super) struct JobHeader {
    code: String,
    stateful: bool,
    timeout_ms: u64,
    heap_limit_bytes: usize,
    max_output_bytes: usize,
    max_result_bytes: usize,
    code_handling: CodeHandling,
    restore_len: Option<usize>,
    plain_restore: bool,
    /// The egress settings, injected headers included: they cross the pipe
    /// to the worker and are never written anywhere.
    fetch: Option<crate::egress::FetchConfig>,
    /// The upstream MCP servers, their headers included: as `fetch`'s.
    mcp: Option<crate::upstream::UpstreamConfig>,
    /// The installed packages and where their bundles are on this host.
    packages: Option<crate::packages::PackageView>,
    max_module_bytes: usize,
    /// Whether earlier files can be read: the worker asks for their bytes
    /// ([`WorkerFrame::NeedFile`]).
    files: bool,
    file_limits: web::FileLimits,
    /// The call's files, by path and length; their bytes follow the
    /// restore payload's.
    inputs: Vec<(String, usize)>,
    list_files: bool,
}

/// What a worker writes: progress while a run executes, then its result.
#[derive(Serialize, Deserialize)]
#[serde(tag = "frame", rename_all = "snake_case")]
pub(super) enum WorkerFrame {
    Progress {
        console_lines: u64,
    },
    /// The bytes of a file the run opened; the server answers with a
    /// [`FileReply`] frame on the worker's stdin.
    NeedFile {
        key: String,
    },
    Result(Box<ResultHeader>),
}

/// The server's answer to [`WorkerFrame::NeedFile`]: the bytes follow.
#[derive(Serialize, Deserialize)]
pub(super) struct FileReply {
    /// `Ok(Some(len))`: `len` bytes follow.
    pub(super) found: Result<Option<usize>, String>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct ResultHeader {
    status: RunStatus,
    result: Option<String>,
    display: Option<String>,
    output: String,
    error: Option<RunError>,
    warnings: Vec<String>,
    blob_len: Option<usize>,
    fetches: Option<crate::egress::FetchCount>,
    mcp_calls: Option<crate::upstream::McpCount>,
    /// Files written, by key and length; their bytes follow the blob's.
    files: Vec<(String, usize)>,
    /// The run's `display()` blocks; the bytes of those that have them
    /// follow the files' (`size` bytes each).
    displays: Vec<web::Displayed>,
    /// Which of `displays` have bytes.
    display_bytes: Vec<bool>,
}

/// The start of a frame: its length and its JSON header, or an error when
/// the header would pass [`MAX_HEADER_BYTES`].
fn head(header: &impl Serialize) -> io::Result<Vec<u8>> {
    let json = serde_json::to_vec(header)?;
    let len = u32::try_from(json.len())
        .ok()
        .filter(|len| *len as usize <= MAX_HEADER_BYTES)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a frame header of {} bytes", json.len()),
            )
        })?;
    let mut frame = Vec::with_capacity(4 + json.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&json);
    Ok(frame)
}

/// Writes one frame: `header`, then `sections` as they are.
pub(super) fn write_frame(
    out: &mut impl Write,
    header: &impl Serialize,
    sections: &[&[u8]],
) -> io::Result<()> {
    out.write_all(&head(header)?)?;
    for section in sections {
        out.write_all(section)?;
    }
    out.flush()
}

fn header_len(len: [u8; 4]) -> io::Result<usize> {
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_HEADER_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame header of {len} bytes"),
        ));
    }
    Ok(len)
}

fn parse<T: DeserializeOwned>(json: &[u8]) -> io::Result<T> {
    serde_json::from_slice(json).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The next header, or `None` at a clean end of the stream.
pub(super) fn read_header<T: DeserializeOwned>(input: &mut impl Read) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut json = vec![0; header_len(len)?];
    input.read_exact(&mut json)?;
    parse(&json).map(Some)
}

/// `len` bytes of a section.
pub(super) fn read_section(input: &mut impl Read, len: usize) -> io::Result<Bytes> {
    let mut bytes = vec![0; len];
    input.read_exact(&mut bytes)?;
    Ok(Bytes::from(bytes))
}

/// [`read_header`] for the server's side; the end of the stream is an
/// error there (the worker died).
pub(super) async fn read_header_async<T: DeserializeOwned>(
    input: &mut (impl AsyncRead + Unpin),
) -> io::Result<T> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len).await?;
    let mut json = vec![0; header_len(len)?];
    input.read_exact(&mut json).await?;
    parse(&json)
}

/// [`read_section`] for the server's side.
pub(super) async fn read_section_async(
    input: &mut (impl AsyncRead + Unpin),
    len: usize,
) -> io::Result<Bytes> {
    let mut bytes = vec![0; len];
    input.read_exact(&mut bytes).await?;
    Ok(Bytes::from(bytes))
}

/// A job as the server sends it: the header's frame start, then the byte
/// sections (the restore payload, the call's files).
pub(super) fn encode_job(job: &Job) -> io::Result<(Vec<u8>, Vec<Bytes>)> {
    let header = JobHeader {
        code: job.code.clone(),
        stateful: job.stateful,
        timeout_ms: u64::try_from(job.timeout.as_millis()).unwrap_or(u64::MAX),
        heap_limit_bytes: job.heap_limit_bytes,
        max_output_bytes: job.max_output_bytes,
        max_result_bytes: job.max_result_bytes,
        code_handling: job.code_handling,
        restore_len: job.restore.as_ref().map(Bytes::len),
        plain_restore: job.plain_restore,
        files: job.files.is_some(),
        file_limits: job.file_limits,
        fetch: job.fetch.as_deref().cloned(),
        mcp: job.mcp.as_deref().cloned(),
        packages: job.packages.as_deref().cloned(),
        max_module_bytes: job.max_module_bytes,
        inputs: job
            .inputs
            .iter()
            .map(|(path, bytes)| (path.clone(), bytes.len()))
            .collect(),
        list_files: job.list_files,
    };
    let sections = job
        .restore
        .iter()
        .cloned()
        .chain(job.inputs.iter().map(|(_, bytes)| bytes.clone()))
        .collect();
    Ok((head(&header)?, sections))
}

/// The job a worker reads: the header and its sections from `input`, with
/// the worker's own control and file source.
pub(super) fn read_job(
    input: &mut impl Read,
    control: Arc<RunControl>,
    files: impl FnOnce() -> Arc<dyn web::FileSource>,
) -> io::Result<Option<Job>> {
    let Some(header) = read_header::<JobHeader>(input)? else {
        return Ok(None);
    };
    let restore = header
        .restore_len
        .map(|len| read_section(input, len))
        .transpose()?;
    let mut inputs = Vec::with_capacity(header.inputs.len());
    for (path, len) in header.inputs {
        inputs.push((path, read_section(input, len)?));
    }
    Ok(Some(Job {
        code: header.code,
        restore,
        plain_restore: header.plain_restore,
        stateful: header.stateful,
        timeout: Duration::from_millis(header.timeout_ms),
        heap_limit_bytes: header.heap_limit_bytes,
        max_output_bytes: header.max_output_bytes,
        max_result_bytes: header.max_result_bytes,
        code_handling: header.code_handling,
        control: Some(control),
        fetch: header.fetch.map(Arc::new),
        mcp: header.mcp.map(Arc::new),
        packages: header.packages.map(Arc::new),
        max_module_bytes: header.max_module_bytes,
        files: header.files.then(files),
        file_limits: header.file_limits,
        inputs,
        list_files: header.list_files,
    }))
}

/// Writes a worker's result. A result whose header would not fit a frame
/// (a bug: every part is capped) becomes a failed run saying so, so that
/// no report ends the worker.
pub(super) fn write_result(out: &mut impl Write, result: JobResult) -> io::Result<()> {
    let JobResult {
        status,
        result,
        display,
        output,
        error,
        warnings,
        blob,
        fetches,
        mcp_calls,
        files,
        displays,
    } = result;
    let shown: Vec<Bytes> = displays.iter().filter_map(|d| d.bytes.clone()).collect();
    let header = ResultHeader {
        status,
        result,
        display,
        output,
        error,
        warnings,
        blob_len: blob.as_ref().map(Vec::len),
        fetches,
        mcp_calls,
        files: files
            .iter()
            .map(|(key, bytes)| (key.clone(), bytes.len()))
            .collect(),
        display_bytes: displays.iter().map(|d| d.bytes.is_some()).collect(),
        displays,
    };
    let sections: Vec<&[u8]> = blob
        .iter()
        .map(Vec::as_slice)
        .chain(files.iter().map(|(_, bytes)| bytes.as_ref()))
        .chain(shown.iter().map(Bytes::as_ref))
        .collect();
    let frame = WorkerFrame::Result(Box::new(header));
    match head(&frame) {
        Ok(start) => {
            out.write_all(&start)?;
            for section in sections {
                out.write_all(section)?;
            }
            out.flush()
        }
        Err(too_large) => {
            let failed = JobResult::failed(RunError::new(
                "EngineError",
                format!(
                    "the run's report could not be sent to the server ({too_large}); nothing was stored"
                ),
            ));
            write_result(out, failed)
        }
    }
}

/// The result whose header the server just read: its sections follow.
pub(super) async fn read_result(
    header: ResultHeader,
    input: &mut (impl AsyncRead + Unpin),
) -> io::Result<JobResult> {
    let blob = match header.blob_len {
        Some(len) => Some(read_section_async(input, len).await?.to_vec()),
        None => None,
    };
    let mut files = Vec::with_capacity(header.files.len());
    for (key, len) in header.files {
        files.push((key, read_section_async(input, len).await?));
    }
    let mut displays = header.displays;
    for (displayed, has_bytes) in displays.iter_mut().zip(header.display_bytes) {
        if has_bytes {
            displayed.bytes = Some(read_section_async(input, displayed.size).await?);
        }
    }
    Ok(JobResult {
        status: header.status,
        result: header.result,
        display: header.display,
        output: header.output,
        error: header.error,
        warnings: header.warnings,
        blob,
        fetches: header.fetches,
        mcp_calls: header.mcp_calls,
        files,
        displays,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(blob: Option<Vec<u8>>) -> JobResult {
        JobResult {
            status: RunStatus::Completed,
            result: Some("2".into()),
            display: Some("2".into()),
            output: "log\n".into(),
            error: None,
            warnings: vec!["w".into()],
            blob,
            fetches: None,
            mcp_calls: None,
            files: vec![("k".into(), Bytes::from_static(b"file"))],
            displays: Vec::new(),
        }
    }

    #[tokio::test]
    async fn results_round_trip_with_and_without_sections() {
        let mut wire = Vec::new();
        write_result(&mut wire, result(Some(vec![1, 2, 3]))).unwrap();
        write_result(&mut wire, result(None)).unwrap();
        let mut input = wire.as_slice();
        for blob in [Some(vec![1, 2, 3]), None] {
            let WorkerFrame::Result(header) = read_header_async(&mut input).await.unwrap() else {
                panic!("a result frame")
            };
            let read = read_result(*header, &mut input).await.unwrap();
            assert_eq!(read.result.as_deref(), Some("2"));
            assert_eq!(read.blob, blob);
            assert_eq!(read.files[0].1.as_ref(), b"file");
        }
        assert!(input.is_empty(), "every section was read");
    }

    #[test]
    fn garbage_and_truncation_are_errors_not_hangs() {
        let mut huge = &u32::MAX.to_le_bytes()[..];
        assert!(read_header::<ResultHeader>(&mut huge).is_err());
        let mut not_json = &[2, 0, 0, 0, b'{', b'x'][..];
        assert!(read_header::<ResultHeader>(&mut not_json).is_err());
        let mut truncated = &[9, 0, 0, 0, b'{'][..];
        assert!(read_header::<ResultHeader>(&mut truncated).is_err());
        let mut short = &[1u8][..];
        assert!(read_section(&mut short, 2).is_err());
        let mut empty = &[][..];
        assert!(read_header::<ResultHeader>(&mut empty).unwrap().is_none());
    }
}
