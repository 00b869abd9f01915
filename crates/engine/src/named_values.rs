//! Named values: a unit enum whose every variant has one name, used by serde, tables,
//! the CSV and the app's menus, declared once with [`named_values!`]. The knobs that are
//! named rather than counted (worker kind, transfers, runtime, where transforms run) are
//! declared with it, each in the module whose behaviour it selects. Every knob's value
//! type is a [`KnobValue`], which the app's setup panel edits: named values as a choice.

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

        impl $crate::named_values::KnobValue for $name {
            fn choices() -> Option<Vec<(String, Self)>> {
                Some($name::ALL.iter().map(|v| (v.name().to_owned(), *v)).collect())
            }

            fn text(&self) -> String {
                self.name().to_owned()
            }

            fn parse(text: &str) -> std::result::Result<Self, String> {
                $name::ALL.iter().copied().find(|v| v.name() == text).ok_or_else(|| {
                    let names: Vec<&str> = $name::ALL.iter().map(|v| v.name()).collect();
                    format!("`{text}` is not one of {}", names.join(", "))
                })
            }
        }
    };
}

pub(crate) use named_values;

/// A knob's value type, as the app edits it: a choice among named values, or text.
pub trait KnobValue: Clone + PartialEq + 'static {
    /// Every value there is to choose from, with its name; `None` (the default) when
    /// the value is typed as text.
    fn choices() -> Option<Vec<(String, Self)>> {
        None
    }
    /// The value as a preset writes it.
    fn text(&self) -> String;
    /// Reads a value typed as text.
    fn parse(text: &str) -> std::result::Result<Self, String>;
}
