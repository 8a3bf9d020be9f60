use yiem_core::mcp::resource;

/// A file.
#[resource(uri = "files://{+path}")]
async fn file(path: String) -> String {
    path
}

fn main() {}
