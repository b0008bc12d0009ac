//! A run's capabilities (console, timers, fetch, `mcp`, modules, `/work`,
//! `display()`, …): each declares its own settings, the call argument it
//! takes, its part of a run's request and of its report, and how that
//! report shows in the run's outcome; it sets itself up in its own isolate
//! slot and takes itself down. `contract/registration.rs` registers them,
//! one line each; a new capability touches its own files and that line.
//!
//! This room also holds what every capability works with: the run's
//! [`control`], its [`outcome`] types, [`positions`] as sent and the byte
//! [`section`]s beside a frame.
//!
//! # Contract
//! - [`Capability::ask`] is the whole of what the capability takes from the
//!   operator (its [`Capability::Settings`], part of the engine's
//!   configuration) and from the call (its [`Capability::ARGUMENT`], the
//!   deployment's packages); an error there refuses the call before
//!   anything runs, in words the caller can act on.
//! - [`Capability::show`] puts what the run's report says into the run's
//!   outcome, in the caller's process; what it leaves in the report (the
//!   bytes of `/work` files) is the engine's to store.
//! - [`Capability::begin`] puts the capability's state for one run in slots
//!   of the isolate; [`Capability::end`] takes all of it out again (a plain
//!   isolate serves many runs, and a snapshot must hold no host handle) and
//!   returns the report. Every begun run ends, whatever way it ended.
//! - [`Capability::pending`] is true while host work the capability started
//!   is still to arrive through the run's host work
//!   ([`crate::engine::services::work`]); the event loop waits
//!   for it as it waits for timers.
//! - A report is small in JSON; bytes travel as
//!   [`Section`](crate::engine::capability::section::Section)s.
//! - `end` runs in registration order; what one leaves for another stays
//!   in a slot until the next run begins (`/work`'s kept files, which
//!   `display` links to).

pub(super) mod control;
pub(super) mod outcome;
pub(super) mod positions;
pub(crate) mod reports;
pub(super) mod section;

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::egress::FetchConfig;
use crate::engine::capability::control::RunControl;
use crate::engine::capability::outcome::RunError;
use crate::engine::capability::outcome::RunReport;
use crate::engine::capability::positions::Positions;
use crate::engine::layer::registry::{Family, Loader};
use crate::engine::services::HostServices;
use crate::engine::services::work::WorkSink;

/// One capability of a run.
pub(crate) trait Capability {
    /// The JavaScript family that gives it its globals, if it has one of
    /// its own; appended to the layer's in registration order.
    const FAMILY: Option<&'static Family> = None;

    /// The argument of `run_js` it takes, if any (the engine passes it in
    /// [`Call`], the tool lists it in its input schema).
    const ARGUMENT: Option<Argument> = None;

    /// The operator's settings for it: its field of the engine's
    /// configuration (`EngineConfig::capabilities`).
    type Settings: Clone + Debug + Default + Send + Sync;

    /// What a run asks of it (the operator's settings for it, the call's
    /// inputs); crosses the worker pipe.
    type Ask: Serialize + DeserializeOwned + Default + Send;
    /// What it says when the run ends; crosses the worker pipe back.
    type Report: Serialize + DeserializeOwned + Default + Debug + Send;

    /// Its ask for one run, from its settings and the call; `Err` says what
    /// is wrong with its argument.
    fn ask(_settings: &Self::Settings, _call: &mut Call<'_>) -> Result<Self::Ask, String> {
        Ok(Self::Ask::default())
    }

    /// Shows its report in the run's report (in the caller's process),
    /// taking what it shows out of it.
    fn show(_report: &mut Self::Report, _shown: &mut RunReport) {}

    /// Sets up its state for one run in `isolate`'s slots.
    fn begin(isolate: &mut v8::Isolate, ask: &Self::Ask, run: &RunScope<'_>);

    /// In the run's context, before its code (`load` loads a family): an
    /// error ends the run failed without running the code.
    fn before_code(
        _scope: &mut v8::PinScope<'_, '_>,
        _ask: &Self::Ask,
        _load: Loader,
    ) -> Result<(), RunError> {
        Ok(())
    }

    /// Whether host work it started is still to arrive.
    fn pending(_isolate: &v8::Isolate) -> bool {
        false
    }

    /// Takes its state out of `isolate`: what the run leaves.
    fn end(isolate: &mut v8::Isolate) -> Self::Report;

    /// What of the report a cancelled run keeps (all of it, unless the
    /// report holds something the run would store).
    fn cancelled(_report: &mut Self::Report) {}

    /// Positions in the report mapped to the code as the caller sent it.
    fn remap(_report: &mut Self::Report, _positions: &Positions) {}
}

/// A capability whose state is a slot of its type's default for the
/// length of a run, asking nothing and reporting nothing: dropping the slot
/// at the end drops the handles it holds, which a snapshot must not.
macro_rules! slot_capability {
    ($state:ty) => {
        $crate::engine::capability::slot_capability!($state, None);
    };
    ($state:ty, $family:expr) => {
        impl $crate::engine::capability::Capability for $state {
            const FAMILY: Option<&'static $crate::engine::layer::registry::Family> = $family;
            type Settings = ();
            type Ask = ();
            type Report = ();

            fn begin(
                isolate: &mut v8::Isolate,
                _: &(),
                _: &$crate::engine::capability::RunScope<'_>,
            ) {
                isolate.set_slot(<$state>::default());
            }

            fn end(isolate: &mut v8::Isolate) {
                drop(isolate.remove_slot::<$state>());
            }
        }
    };
}
pub(crate) use slot_capability;

/// A family with no state of its own in a run: registered like every
/// capability, it only brings its globals (`$family`).
macro_rules! family_capability {
    ($(#[$attr:meta])* $name:ident, $family:expr) => {
        $(#[$attr])*
        pub(crate) struct $name;

        impl $crate::engine::capability::Capability for $name {
            const FAMILY: Option<&'static $crate::engine::layer::registry::Family> =
                Some(&$family);
            type Settings = ();
            type Ask = ();
            type Report = ();

            fn begin(
                _: &mut v8::Isolate,
                _: &(),
                _: &$crate::engine::capability::RunScope<'_>,
            ) {
            }

            fn end(_: &mut v8::Isolate) {}
        }
    };
}
pub(crate) use family_capability;

/// What a capability gets for one run besides its own ask.
pub(crate) struct RunScope<'a> {
    /// When the run's time is up.
    pub deadline: Instant,
    /// The caller's handle (its cancel).
    pub control: Option<&'a Arc<RunControl>>,
    /// The host's services: its runtime, stores and clients.
    pub host: &'a HostServices,
    /// Where host work the capability starts reports back to the run.
    pub work: WorkSink,
    /// The run's egress policy (`fetch`'s), which other capabilities reach
    /// the network under too (modules by URL).
    pub egress: Option<&'a Arc<FetchConfig>>,
}

/// A `run_js` argument a capability takes.
#[derive(Clone, Copy)]
pub(crate) struct Argument {
    /// Its name in the call's arguments.
    pub name: &'static str,
    /// Its JSON Schema (with its description), from the generator of
    /// `run_js`'s input schema.
    pub schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
}

/// What the call brings the capabilities of its run.
#[derive(Default)]
pub(crate) struct Call<'a> {
    /// The capabilities' arguments of the call, by name; each takes its own.
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// The deployment's packages as the run sees them, when it has a
    /// package store.
    pub packages: Option<&'a Arc<crate::packages::PackageView>>,
    /// Whom the run's `elicit()` can ask.
    pub elicitation: crate::elicit::ElicitAsk,
    /// Whose run it is (the anonymous tenant for the engine's own).
    pub tenant: crate::tenant::Tenant,
}

impl Call<'_> {
    /// Takes the argument `name` as a `T`; `None` when the call has none.
    pub(crate) fn take<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, String> {
        match self.arguments.remove(name) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(value) => serde_json::from_value(value)
                .map(Some)
                .map_err(|e| format!("the {name} argument is not valid: {e}")),
        }
    }
}
