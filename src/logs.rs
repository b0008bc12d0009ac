//! JSON log lines whose request fields are top-level keys. tracing's own
//! JSON formatter nests span fields under `span`/`spans`; CloudWatch Logs
//! Insights and Lambda's JSON log format want `session`, `tool`, `status`
//! beside `message`. [`SpanFields`] keeps each span's recorded fields, and
//! [`JsonLines`] writes them, outermost span first, then the event's own.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// The fields a span has recorded so far, in its extensions.
#[derive(Debug, Default)]
struct Fields(Map<String, Value>);

/// Writes recorded values into a JSON object.
struct Visitor<'a>(&'a mut Map<String, Value>);

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0
            .insert(field.name().to_owned(), Value::from(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::from(format!("{value:?}")));
    }
}

/// Keeps every span's recorded fields for [`JsonLines`].
#[derive(Debug, Default, Clone, Copy)]
pub struct SpanFields;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for SpanFields {
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
        let mut fields = Fields::default();
        attributes.record(&mut Visitor(&mut fields.0));
        if let Some(span) = context.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, context: Context<'_, S>) {
        if let Some(span) = context.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(&mut Visitor(&mut fields.0));
        }
    }
}

/// One JSON object per event: `timestamp`, `level`, `target`, the fields
/// of the spans it happened in, and its own fields (`message` among them).
#[derive(Debug, Default, Clone, Copy)]
pub struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = Map::new();
        let now = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        line.insert("timestamp".into(), Value::from(now));
        let metadata = event.metadata();
        line.insert("level".into(), Value::from(metadata.level().as_str()));
        line.insert("target".into(), Value::from(metadata.target()));
        if let Some(scope) = context.event_scope() {
            for span in scope.from_root() {
                if let Some(fields) = span.extensions().get::<Fields>() {
                    line.extend(fields.0.clone());
                }
            }
        }
        event.record(&mut Visitor(&mut line));
        writeln!(writer, "{}", Value::Object(line))
    }
}
