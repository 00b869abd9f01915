//! Named values: a unit enum whose every variant has one name, used by serde, tables,
//! the CSV and the app's menus, declared once with [`named_values!`]. The knobs that are
//! named rather than counted (worker kind, transfers, runtime, where transforms run) are
//! declared with it, each in the module whose behaviour it selects.

/// Declares a unit enum whose every variant has one name, used by serde, `name()` and
/// the app's menus (`ALL`, in declaration order).
macro_rules! named_values {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident = $text:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize,
        )]
        pub enum $name {
            $($(#[$variant_meta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &[$name] = &[$($name::$variant),+];

            /// The name presets, tables and the app use.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }
    };
}

pub(crate) use named_values;
