//! The registered capabilities (the trait: [`super::capability`]): one line
//! each below, which gives a run's [`Asks`] and [`Reports`] a field, the
//! layer the capability's family, and the run core a call of each step.

use serde::{Deserialize, Serialize};

use super::capability::{Capability, RunScope};
use super::layer::registry::{Family, Loader};
use super::outcome::RunError;
use super::positions::Positions;

/// Registers the capabilities: the run's [`Asks`] and [`Reports`] get a
/// field of each, the layer gets the family of each that has one, and the
/// run core calls each in turn.
macro_rules! capabilities {
    ($($(#[$attr:meta])* $field:ident: $cap:ty,)*) => {
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
        }
    };
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
