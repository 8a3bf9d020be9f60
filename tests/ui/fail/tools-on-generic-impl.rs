use std::marker::PhantomData;

use yiem_core::{tool, tools};

struct Store<B>(PhantomData<B>);

#[tools]
impl<B: Send + Sync + 'static> Store<B> {
    /// Name the backend.
    #[tool]
    async fn backend(&self) -> String {
        std::any::type_name::<B>().to_owned()
    }
}

fn main() {}
