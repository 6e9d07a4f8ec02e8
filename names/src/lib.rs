//! `indexed_enum!`: declares an enum whose variants are dense indices `0..N` in declaration
//! order, each with a stable name, together with its tables — `ALL` (every variant in index
//! order), `COUNT`, `NAMES` — and `name`, `index`, `from_index` and `from_name`. The variant
//! list is written once, so a new variant cannot be left out of a table or named out of
//! order. No dependencies: the trace-format, memory and tracer crates, which depend on no
//! other isim crate, can use it.

/// Declares an enum of dense indices with a stable name per variant; see the crate docs.
///
/// ```
/// isim_names::indexed_enum! {
///     /// Where an access was served.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Level {
///         /// First level.
///         L1 = "l1",
///         /// Memory.
///         Dram = "dram",
///     }
/// }
/// assert_eq!(Level::ALL, [Level::L1, Level::Dram]);
/// assert_eq!(Level::NAMES, ["l1", "dram"]);
/// assert_eq!(Level::COUNT, 2);
/// assert_eq!(Level::Dram.name(), "dram");
/// assert_eq!(Level::Dram.index(), 1);
/// assert_eq!(Level::from_index(1), Some(Level::Dram));
/// assert_eq!(Level::from_name("l1"), Some(Level::L1));
/// assert_eq!(Level::from_name("l2"), None);
/// ```
#[macro_export]
macro_rules! indexed_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $ty:ident {
            $($(#[$vmeta:meta])* $variant:ident = $name:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $ty {
            $($(#[$vmeta])* $variant),+
        }

        impl $ty {
            /// Number of variants.
            pub const COUNT: usize = [$(stringify!($variant)),+].len();

            /// Every variant, in index order.
            pub const ALL: [$ty; [$(stringify!($variant)),+].len()] = [$($ty::$variant),+];

            /// Every variant's stable name, in index order.
            pub const NAMES: [&'static str; [$(stringify!($variant)),+].len()] = [$($name),+];

            /// The stable name.
            #[inline]
            pub fn name(self) -> &'static str {
                Self::NAMES[self as usize]
            }

            /// The dense index, `0..COUNT`.
            #[inline]
            pub fn index(self) -> usize {
                self as usize
            }

            /// The variant with this index.
            #[inline]
            pub fn from_index(i: usize) -> Option<Self> {
                Self::ALL.get(i).copied()
            }

            /// The variant with this stable name.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::NAMES.iter().position(|&n| n == name).map(|i| Self::ALL[i])
            }
        }
    };
}

/// `Serialize` and `Deserialize` for an [`indexed_enum!`] type as its stable name; reading an
/// unknown name is an error listing the allowed ones. Expands in the calling crate, which
/// must depend on `serde` (this crate does not).
///
/// ```ignore
/// isim_names::serde_by_name!(Level);
/// ```
#[macro_export]
macro_rules! serde_by_name {
    ($ty:ty) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Self::from_name(&name)
                    .ok_or_else(|| serde::de::Error::unknown_variant(&name, &Self::NAMES))
            }
        }
    };
}
