pub mod resumable;
