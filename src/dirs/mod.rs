//! The directories that are isim's interface — a run, a sweep, a PCA — as typed rooms: one
//! `Serialize + Deserialize` struct per documented file (`docs/output.md`), shared by the verb
//! that writes it and every verb that reads it, with the file's name and schema version in one
//! place. Readers take the typed value and never re-parse what it already holds.

pub mod pca;
pub mod run;
pub mod sweep;
