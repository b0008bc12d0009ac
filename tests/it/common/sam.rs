//! AWS's SAM transform (the `aws-sam-translator` package, through
//! tests/sam_transform.py), run offline over template.yaml.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A tool the test scripts install into `.venv`.
pub fn venv_tool(name: &str) -> PathBuf {
    let tool = project().join(".venv/bin").join(name);
    assert!(
        tool.exists(),
        "{name} is not installed: run scripts/test.sh"
    );
    tool
}

/// The CloudFormation template SAM makes of template.yaml with
/// `parameters`, also written to `output`.
pub fn transformed(parameters: &Value, output: &Path) -> Value {
    let run = Command::new(venv_tool("python"))
        .arg(project().join("tests/sam_transform.py"))
        .arg(project().join("template.yaml"))
        .arg(output)
        .arg(parameters.to_string())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "the SAM transform failed for {parameters}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&std::fs::read(output).unwrap()).unwrap()
}

/// The statements of every policy of the function's role in a transformed
/// template: its inline policies and the policies attached to it.
pub fn function_statements(template: &Value) -> Vec<Value> {
    let resources = template["Resources"].as_object().unwrap();
    let (role_name, role) = resources
        .iter()
        .find(|(_, r)| r["Type"] == "AWS::IAM::Role" && r["Properties"]["Policies"].is_array())
        .expect("the function's role");
    let attached = resources.values().filter(|r| {
        r["Type"] == "AWS::IAM::Policy"
            && r["Properties"]["Roles"]
                .as_array()
                .is_some_and(|roles| roles.iter().any(|role| role["Ref"] == role_name.as_str()))
    });
    role["Properties"]["Policies"]
        .as_array()
        .unwrap()
        .iter()
        .chain(attached.map(|r| &r["Properties"]))
        .flat_map(|p| p["PolicyDocument"]["Statement"].as_array().unwrap().clone())
        .collect()
}
