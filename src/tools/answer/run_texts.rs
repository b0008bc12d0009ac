//! A run's whole output and result, kept beside its execution record: a
//! text of more than [`APART_MIN`] bytes goes to the records store (content
//! addressed, per tenant, `records/` beside the run's files, expiring with
//! the records) and the record names it, so a DynamoDB item stays small and
//! a link reads the text without the rest of the record (docs/tools.md,
//! "The answer budget").

use std::collections::VecDeque;
use std::sync::{Arc, LazyLock, Mutex};

use bytes::Bytes;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::pages::Paged;
use crate::meta::{ExecutionRecord, KeptText, KeptTexts};
use crate::protocol::uri::RunText;
use crate::tenant::Tenant;
use crate::tools::toolbox::Toolbox;
use crate::units::MIB;

/// Texts up to this long stay inside the record, where reading them costs
/// nothing more.
pub(in crate::tools) const APART_MIN: usize = 16 * 1024;

/// Moves the long `output` and `result` of a record's `outcome` into the
/// records store, leaving them empty there; what the record must name.
/// A text that cannot be stored stays inside the record (logged).
pub(in crate::tools) async fn keep_apart(
    toolbox: &Toolbox,
    tenant: &Tenant,
    outcome: &mut Map<String, Value>,
) -> Option<KeptTexts> {
    let store = toolbox.records.as_ref()?;
    let mut kept = KeptTexts::default();
    for part in [RunText::Output, RunText::Result] {
        let Some(Value::String(text)) = outcome.get(part.as_str()) else {
            continue;
        };
        if text.len() <= APART_MIN {
            continue;
        }
        let bytes = Bytes::from(text.clone().into_bytes());
        match store.put(tenant, &bytes).await {
            Ok(key) => {
                let text = KeptText {
                    key,
                    bytes: bytes.len() as u64,
                };
                outcome.insert(
                    part.as_str().into(),
                    match part {
                        RunText::Output => Value::String(String::new()),
                        RunText::Result => Value::Null,
                    },
                );
                match part {
                    RunText::Output => kept.output = Some(text),
                    RunText::Result => kept.result = Some(text),
                }
            }
            Err(e) => tracing::warn!(
                error = %e,
                part = part.as_str(),
                "a run's text could not be kept apart; its record holds it"
            ),
        }
    }
    (kept != KeptTexts::default()).then_some(kept)
}

/// The whole `part` of `record`'s run: from the records store when it was
/// kept apart, else from the record; `None` when the run has none.
pub async fn text(
    toolbox: &Toolbox,
    tenant: &Tenant,
    record: &ExecutionRecord,
    part: RunText,
) -> Result<Option<String>, String> {
    let apart = record.kept.as_ref().and_then(|kept| match part {
        RunText::Output => kept.output.as_ref(),
        RunText::Result => kept.result.as_ref(),
    });
    let Some(apart) = apart else {
        return Ok(match record.outcome.get(part.as_str()) {
            Some(Value::String(text)) => Some(text.clone()),
            _ => None,
        });
    };
    let id = record.execution_id;
    let store = toolbox.records.as_ref().ok_or_else(|| {
        format!(
            "the {} of execution {id} was kept apart from its record, and this server has no \
             records store to read it from",
            part.as_str()
        )
    })?;
    let bytes = store
        .get(tenant, &apart.key)
        .await
        .map_err(|e| {
            format!(
                "could not read the {} of execution {id}: {e}",
                part.as_str()
            )
        })?
        .ok_or_else(|| {
            format!(
                "the {} of execution {id} ({} bytes) is no longer kept (the records store \
                 expired it); run the code again to see it",
                part.as_str(),
                apart.bytes
            )
        })?;
    String::from_utf8(bytes.to_vec())
        .map(Some)
        .map_err(|_| format!("the kept {} of execution {id} is not UTF-8", part.as_str()))
}

/// `record` with its texts back inside it, as the run answered them.
pub async fn whole(
    toolbox: &Toolbox,
    tenant: &Tenant,
    mut record: ExecutionRecord,
) -> Result<ExecutionRecord, String> {
    if record.kept.is_none() {
        return Ok(record);
    }
    for part in [RunText::Output, RunText::Result] {
        if let Some(text) = text(toolbox, tenant, &record, part).await? {
            record
                .outcome
                .insert(part.as_str().into(), Value::String(text));
        }
    }
    record.kept = None;
    Ok(record)
}

/// Bytes of paged texts held in one process: a model reading a 9 MB
/// result page by page reads and pages it once, not once a page.
const HELD_PAGED_BYTES: usize = 64 * MIB;

type PagedKey = (Tenant, Uuid, &'static str, usize);
type Held = VecDeque<(PagedKey, Arc<Paged>)>;

/// Paged texts by what never changes (a run's record is written once),
/// the least recently read first out.
static PAGED: LazyLock<Mutex<Held>> = LazyLock::new(Mutex::default);

/// `part` of `record`'s run in pages of about `size` bytes; `None` when
/// the run has no such part.
pub async fn paged(
    toolbox: &Toolbox,
    tenant: &Tenant,
    record: &ExecutionRecord,
    part: RunText,
    size: usize,
) -> Result<Option<Arc<Paged>>, String> {
    let key = (tenant.clone(), record.execution_id, part.as_str(), size);
    {
        let mut held = PAGED.lock().expect("paged texts");
        if let Some(at) = held.iter().position(|(k, _)| *k == key) {
            let entry = held.remove(at).expect("found");
            let paged = entry.1.clone();
            held.push_back(entry);
            return Ok(Some(paged));
        }
    }
    let Some(text) = text(toolbox, tenant, record, part).await? else {
        return Ok(None);
    };
    let paged = tokio::task::spawn_blocking(move || Arc::new(Paged::new(&text, part, size)))
        .await
        .map_err(|e| format!("could not page the {}: {e}", part.as_str()))?;
    if paged.bytes() <= HELD_PAGED_BYTES {
        let mut held = PAGED.lock().expect("paged texts");
        held.retain(|(k, _)| *k != key);
        held.push_back((key, paged.clone()));
        let mut total: usize = held.iter().map(|(_, p)| p.bytes()).sum();
        while total > HELD_PAGED_BYTES {
            let Some((_, oldest)) = held.pop_front() else {
                break;
            };
            total -= oldest.bytes();
        }
    }
    Ok(Some(paged))
}
