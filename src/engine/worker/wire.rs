//! What crosses an engine worker's pipes: frames of a little-endian `u32`
//! length and a JSON header of that length, a table of section lengths (a
//! `u32` count, then a `u64` each), then the raw byte sections themselves
//! (a heap's payload, files, `display()` bytes: the
//! [`Section`](crate::engine::capability::section::Section)s of the header). The
//! headers are the run contract's own types; nothing mirrors them. The
//! worker reads with blocking I/O on its runner thread; the server reads
//! with Tokio, so a run costs it no thread while the worker works.

use std::io::{self, Read, Write};

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::backends::content::ContentKey;
use crate::engine::capability::outcome::RunError;
use crate::engine::capability::section::{Section, read_sections, write_sections};
use crate::engine::contract::JobResult;
use crate::units::MIB;

/// The largest header either side reads. Every part of one is bounded far
/// below it (code, console output and the result by their caps, which the
/// worker applies before it writes); a larger length means the stream is
/// not ours.
pub(super) const MAX_HEADER_BYTES: usize = 64 * MIB;

/// The most sections one frame has (files of a tree, `display()` blocks
/// and a heap are each capped far below it).
const MAX_SECTIONS: usize = 1 << 20;

/// What a worker writes: progress while a run executes, then its result.
/// Externally tagged: an internally tagged enum buffers its content, and
/// serde_json's buffered numbers do not read back as floats.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum WorkerFrame {
    Progress {
        console_lines: u64,
        /// [`RunControl::note`](crate::engine::RunControl::note).
        #[serde(default)]
        note: Option<String>,
        /// Console lines since the last report, for a caller that asked
        /// for them ([`RunControl::forward_console`](crate::engine::RunControl::forward_console)).
        #[serde(default)]
        log: Vec<crate::engine::capability::reports::LogEntry>,
        /// The run's progress reports since the last report.
        #[serde(default)]
        progress: Vec<crate::engine::capability::reports::RunProgress>,
    },
    /// The bytes of a file the run opened; the server answers with a
    /// [`FileReply`] frame on the worker's stdin.
    NeedFile {
        key: ContentKey,
    },
    /// A completed stateful run's result before its heap is snapshotted;
    /// the `Result` with the heap follows.
    Ran(Box<JobResult>),
    Result(Box<JobResult>),
    /// The worker has restored the heap of its last `Result` for the next
    /// call (`restored`: it succeeded) and waits for its next job. Read by
    /// [`super::WorkerPool::settle`], skipped by a run.
    Readied {
        restored: bool,
    },
    /// The blob of job `seq`'s heap, which a forked copy of the worker
    /// wrote after the job's `Result` (`snapshot_pending`), or why there is
    /// none. It may come between the frames of a later job.
    Snapshot {
        seq: u64,
        blob: Result<Section, String>,
    },
    /// Job `seq`'s heap will never be snapshotted: a newer run of its line
    /// completed before its forked copy's turn came (`gate.rs`).
    Superseded {
        seq: u64,
    },
}

/// The server's answer to [`WorkerFrame::NeedFile`].
#[derive(Serialize, Deserialize)]
pub(super) struct FileReply {
    pub(super) found: Result<Option<Section>, String>,
}

/// A frame ready to write: its start (length, JSON header, section table)
/// and its sections, as they are.
pub(super) struct Frame {
    pub(super) start: Vec<u8>,
    pub(super) sections: Vec<Bytes>,
}

/// `header` as a frame, or an error when its JSON would pass
/// [`MAX_HEADER_BYTES`] (or a value would not serialise).
pub(super) fn encode(header: &impl Serialize) -> io::Result<Frame> {
    let (json, sections) = write_sections(|| serde_json::to_vec(header));
    let json = json?;
    let len = u32::try_from(json.len())
        .ok()
        .filter(|len| *len as usize <= MAX_HEADER_BYTES)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a frame header of {} bytes", json.len()),
            )
        })?;
    let mut start = Vec::with_capacity(8 + json.len() + 8 * sections.len());
    start.extend_from_slice(&len.to_le_bytes());
    start.extend_from_slice(&json);
    start.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    for section in &sections {
        start.extend_from_slice(&(section.len() as u64).to_le_bytes());
    }
    Ok(Frame { start, sections })
}

/// Writes one frame of `header`.
pub(super) fn write_frame(out: &mut impl Write, header: &impl Serialize) -> io::Result<()> {
    write_encoded(out, &encode(header)?)
}

pub(super) fn write_encoded(out: &mut impl Write, frame: &Frame) -> io::Result<()> {
    out.write_all(&frame.start)?;
    for section in &frame.sections {
        out.write_all(section)?;
    }
    out.flush()
}

/// Writes a worker's result. A result whose header would not fit a frame
/// (a bug: every part is capped) becomes a failed run saying so, so that
/// no report ends the worker.
pub(super) fn write_result(out: &mut impl Write, result: JobResult) -> io::Result<()> {
    let frame = WorkerFrame::Result(Box::new(result));
    match encode(&frame) {
        Ok(encoded) => write_encoded(out, &encoded),
        Err(too_large) => {
            let failed = JobResult::failed(RunError::new(
                "EngineError",
                format!(
                    "the run's report could not be sent to the server ({too_large}); nothing was stored"
                ),
            ));
            write_frame(out, &WorkerFrame::Result(Box::new(failed)))
        }
    }
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

fn section_count(count: [u8; 4]) -> io::Result<usize> {
    let count = u32::from_le_bytes(count) as usize;
    if count > MAX_SECTIONS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {count} sections"),
        ));
    }
    Ok(count)
}

fn section_len(len: [u8; 8]) -> io::Result<usize> {
    usize::try_from(u64::from_le_bytes(len))
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a section too large"))
}

fn parse<T: DeserializeOwned>(json: &[u8], sections: Vec<Bytes>) -> io::Result<T> {
    read_sections(sections, || serde_json::from_slice(json))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The next frame, or `None` at a clean end of the stream.
pub(super) fn read_frame<T: DeserializeOwned>(input: &mut impl Read) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut json = vec![0; header_len(len)?];
    input.read_exact(&mut json)?;
    let mut count = [0u8; 4];
    input.read_exact(&mut count)?;
    let count = section_count(count)?;
    let mut lens = Vec::with_capacity(count);
    for _ in 0..count {
        let mut len = [0u8; 8];
        input.read_exact(&mut len)?;
        lens.push(section_len(len)?);
    }
    let mut sections = Vec::with_capacity(count);
    for len in lens {
        let mut bytes = vec![0; len];
        input.read_exact(&mut bytes)?;
        sections.push(Bytes::from(bytes));
    }
    parse(&json, sections).map(Some)
}

/// [`read_frame`] for the server's side; the end of the stream is an
/// error there (the worker died).
pub(super) async fn read_frame_async<T: DeserializeOwned>(
    input: &mut (impl AsyncRead + Unpin),
) -> io::Result<T> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len).await?;
    let mut json = vec![0; header_len(len)?];
    input.read_exact(&mut json).await?;
    let mut count = [0u8; 4];
    input.read_exact(&mut count).await?;
    let count = section_count(count)?;
    let mut lens = Vec::with_capacity(count);
    for _ in 0..count {
        let mut len = [0u8; 8];
        input.read_exact(&mut len).await?;
        lens.push(section_len(len)?);
    }
    let mut sections = Vec::with_capacity(count);
    for len in lens {
        let mut bytes = vec![0; len];
        input.read_exact(&mut bytes).await?;
        sections.push(Bytes::from(bytes));
    }
    parse(&json, sections)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::capability::outcome::RunStatus;
    use crate::engine::capability::section::Text;
    use crate::engine::contract::{Job, Task};

    fn result(blob: Option<Vec<u8>>) -> JobResult {
        let mut result = JobResult::failed(RunError::new("E", "m"));
        result.status = RunStatus::Completed;
        result.error = None;
        result.result = Some("2".into());
        result.reports.console = Text("log\n".into());
        result.blob = blob.map(Section::from);
        result.listing = Some(vec![crate::engine::host::TreeEntry {
            path: "/work/a".into(),
            key: None,
            dir: false,
            size: 0,
            mtime_ms: 1764121471348.582,
            chunked: true,
            whole: None,
        }]);
        result.reports.files = vec![(ContentKey::of(b"file"), Section::from(b"file".to_vec()))];
        result
    }

    #[tokio::test]
    async fn results_round_trip_with_and_without_sections() {
        let mut wire = Vec::new();
        write_result(&mut wire, result(Some(vec![1, 2, 3]))).unwrap();
        write_result(&mut wire, result(None)).unwrap();
        let mut input = wire.as_slice();
        for blob in [Some(vec![1, 2, 3]), None] {
            let WorkerFrame::Result(read) = read_frame_async(&mut input).await.unwrap() else {
                panic!("a result frame")
            };
            assert_eq!(read.result.as_deref(), Some("2"));
            assert_eq!(read.reports.console.0, "log\n");
            assert_eq!(read.blob.map(|b| b.to_vec()), blob);
            assert_eq!(read.reports.files[0].1.as_ref(), b"file");
            assert_eq!(read.listing.unwrap()[0].mtime_ms, 1764121471348.582);
        }
        assert!(input.is_empty(), "every section was read");
    }

    #[tokio::test]
    async fn long_output_and_results_cross_as_sections_not_escaped_json() {
        // Escaping would grow this output sixfold inside the header.
        let output = "\u{1}".repeat(3 << 20);
        let value = format!("\"{}\"", "é\\n".repeat(1 << 20));
        let mut sent = result(None);
        sent.reports.console = Text(output.clone());
        sent.result = Some(value.clone());
        let frame = encode(&WorkerFrame::Result(Box::new(sent))).unwrap();
        assert!(frame.start.len() < 64 * 1024, "{}", frame.start.len());
        let mut wire = Vec::new();
        write_encoded(&mut wire, &frame).unwrap();
        let WorkerFrame::Result(read) = read_frame_async(&mut wire.as_slice()).await.unwrap()
        else {
            panic!("a result frame")
        };
        assert_eq!(read.reports.console.0, output);
        assert_eq!(read.result, Some(value));
    }

    #[test]
    fn a_job_crosses_as_it_is_with_its_sections() {
        let mut job = crate::engine::plan::fresh_job("6*7".into());
        job.restore = Some(Section::from(vec![9; 1000]));
        job.asks.files.inputs = vec![("/work/a".into(), Section::from(b"abc".to_vec()))];
        job.asks.console.max_output_bytes = 77;
        let mut wire = Vec::new();
        write_frame(&mut wire, &job).unwrap();
        let read: Job = read_frame(&mut wire.as_slice()).unwrap().unwrap();
        assert!(matches!(read.task, Task::Run { ref code } if code == "6*7"));
        assert_eq!(read.restore.unwrap().len(), 1000);
        assert_eq!(read.asks.files.inputs[0].1.as_ref(), b"abc");
        assert_eq!(read.asks.console.max_output_bytes, 77);
    }

    #[test]
    fn garbage_and_truncation_are_errors_not_hangs() {
        let mut huge = &u32::MAX.to_le_bytes()[..];
        assert!(read_frame::<WorkerFrame>(&mut huge).is_err());
        let mut not_json = &[2, 0, 0, 0, b'{', b'x', 0, 0, 0, 0][..];
        assert!(read_frame::<WorkerFrame>(&mut not_json).is_err());
        let mut truncated = &[9, 0, 0, 0, b'{'][..];
        assert!(read_frame::<WorkerFrame>(&mut truncated).is_err());
        let mut missing_section = &[
            2, 0, 0, 0, b'{', b'}', 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1,
        ][..];
        assert!(read_frame::<FileReply>(&mut missing_section).is_err());
        let mut empty = &[][..];
        assert!(read_frame::<WorkerFrame>(&mut empty).unwrap().is_none());
    }

    #[test]
    fn a_section_index_outside_the_frame_is_refused() {
        let mut wire = Vec::new();
        let json = br#"{"found":{"Ok":3}}"#;
        wire.extend_from_slice(&(json.len() as u32).to_le_bytes());
        wire.extend_from_slice(json);
        wire.extend_from_slice(&0u32.to_le_bytes());
        assert!(read_frame::<FileReply>(&mut wire.as_slice()).is_err());
    }
}
