//! The registered capabilities (the trait: [`super::capability`]): one line
//! each below, which gives the engine's [`CapabilitySettings`] and a run's
//! [`Asks`] and [`Reports`] a field, `run_js` the capability's argument,
//! the layer its family, and the run core a call of each step.

use serde::{Deserialize, Serialize};

use super::capability::{Argument, Call, Capability, RunScope};
use super::layer::registry::{Family, Loader};
use super::outcome::RunError;
use super::outcome::RunReport;
use super::positions::Positions;

/// Registers the capabilities: the run's [`Asks`] and [`Reports`] get a
/// field of each, the layer gets the family of each that has one, and the
/// run core calls each in turn.
macro_rules! capabilities {
    ($($(#[$attr:meta])* $field:ident: $cap:ty,)*) => {
        /// The operator's settings of each capability, part of the
        /// engine's configuration.
        // Each field's type is the capability's public settings type,
        // named through the crate's own trait.
        #[allow(private_interfaces)]
        #[derive(Debug, Clone, Default)]
        pub struct CapabilitySettings {
            $(
                $(#[$attr])*
                #[doc = concat!("The settings of `", stringify!($field), "`.")]
                pub $field: <$cap as Capability>::Settings,
            )*
        }

        /// The run's asks, each from its capability's settings and the call;
        /// `Err` says what is wrong with an argument, or names the ones no
        /// capability takes.
        pub(super) fn asks(settings: &CapabilitySettings, mut call: Call<'_>) -> Result<Asks, String> {
            let asks = Asks {
                $($(#[$attr])* $field: <$cap as Capability>::ask(&settings.$field, &mut call)?,)*
            };
            match call.arguments.keys().next() {
                None => Ok(asks),
                Some(name) => Err(format!(
                    "run_js has no argument {name:?}; it takes {}",
                    arguments().map(|a| a.name).collect::<Vec<_>>().join(", ")
                )),
            }
        }

        const ARGUMENTS: &[Option<Argument>] = &[
            $($(#[$attr])* <$cap as Capability>::ARGUMENT,)*
        ];

        /// Each capability's part of a run's request.
        #[derive(Default, Serialize, Deserialize)]
        pub(crate) struct Asks {
            $($(#[$attr])* pub $field: <$cap as Capability>::Ask,)*
        }

        /// Each capability's part of a run's report.
        #[derive(Debug, Default, Serialize, Deserialize)]
        pub(crate) struct Reports {
            $($(#[$attr])* pub $field: <$cap as Capability>::Report,)*
        }

        const FAMILIES: &[Option<&'static Family>] = &[
            $($(#[$attr])* <$cap as Capability>::FAMILY,)*
        ];

        /// Sets every capability up for one run.
        pub(super) fn begin(isolate: &mut v8::Isolate, asks: &Asks, run: &RunScope<'_>) {
            $($(#[$attr])* <$cap as Capability>::begin(isolate, &asks.$field, run);)*
        }

        /// Every capability's step before the code.
        pub(super) fn before_code(
            scope: &mut v8::PinScope<'_, '_>,
            asks: &Asks,
            load: Loader,
        ) -> Result<(), RunError> {
            $($(#[$attr])* <$cap as Capability>::before_code(scope, &asks.$field, load)?;)*
            Ok(())
        }

        /// Whether any capability waits for host work.
        pub(super) fn pending(isolate: &v8::Isolate) -> bool {
            $(
                $(#[$attr])*
                if <$cap as Capability>::pending(isolate) {
                    return true;
                }
            )*
            false
        }

        /// Takes every capability down, in registration order.
        pub(super) fn end(isolate: &mut v8::Isolate) -> Reports {
            Reports {
                $($(#[$attr])* $field: <$cap as Capability>::end(isolate),)*
            }
        }

        impl Reports {
            pub(super) fn cancelled(&mut self) {
                $($(#[$attr])* <$cap as Capability>::cancelled(&mut self.$field);)*
            }

            pub(super) fn remap(&mut self, positions: &Positions) {
                $($(#[$attr])* <$cap as Capability>::remap(&mut self.$field, positions);)*
            }

            /// Shows every capability's report in `shown`.
            pub(super) fn show(&mut self, shown: &mut RunReport) {
                $($(#[$attr])* <$cap as Capability>::show(&mut self.$field, shown);)*
            }
        }
    };
}

/// The `run_js` arguments capabilities take, in registration order.
pub(crate) fn arguments() -> impl Iterator<Item = Argument> {
    ARGUMENTS.iter().filter_map(|argument| *argument)
}

/// The families capabilities declare, in registration order.
pub(super) fn families() -> impl Iterator<Item = &'static Family> {
    FAMILIES.iter().filter_map(|family| *family)
}

// One line per capability. Those with a family of their own come last, in
// the order their families joined the layer (stored heaps find natives by
// index): a new one is appended.
capabilities! {
    console: super::web::console::Console,
    timers: super::web::Timers,
    clock: super::web::performance::RunStart,
    guard: super::web::guard::Unsnapshottable,
    fetch: super::web::FetchRun,
    modules: super::host::modules::ModuleRun,
    files: super::host::files::FilesRun,
    display: super::host::display::Displays,
    mcp: super::host::mcp::McpRun,
    process: super::host::process::ProcessRun,
    node: super::host::node::NodeLib,
    #[cfg(test)]
    toy: super::host::toy::Toy,
}
