//! AWS's SAM transform (the `aws-sam-translator` package, through
//! tests/sam_transform.py), run offline over template.yaml.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value, json};

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

/// cfn-lint over `templates` (paths relative to the project), passing.
pub fn cfn_lint<P: AsRef<std::ffi::OsStr>>(templates: &[P]) {
    let lint = Command::new(venv_tool("cfn-lint"))
        .args(templates)
        .current_dir(project())
        .output()
        .unwrap();
    assert!(
        lint.status.success(),
        "cfn-lint: {}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
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

/// A parameter's value: the one given, else the template's default.
pub fn parameter(template: &Value, given: &Value, name: &str) -> Value {
    given
        .get(name)
        .cloned()
        .unwrap_or_else(|| template["Parameters"][name]["Default"].clone())
}

/// Evaluates the condition functions CloudFormation evaluates at deploy
/// time (in `Conditions` and `Rules`), over parameter values.
pub fn evaluate(template: &Value, given: &Value, expression: &Value) -> Value {
    let Some(object) = expression.as_object() else {
        return expression.clone();
    };
    let (function, arguments) = object.iter().next().expect("one function");
    let args = || arguments.as_array().expect("a list of arguments");
    let truth = |value: &Value| value.as_bool().expect("a condition is true or false");
    match function.as_str() {
        "Ref" => parameter(template, given, arguments.as_str().unwrap()),
        "Condition" => {
            let name = arguments.as_str().unwrap();
            evaluate(template, given, &template["Conditions"][name])
        }
        "Fn::Equals" => {
            let [a, b] = [&args()[0], &args()[1]].map(|e| evaluate(template, given, e));
            Value::Bool(a == b)
        }
        "Fn::Not" => Value::Bool(!truth(&evaluate(template, given, &args()[0]))),
        "Fn::Or" => Value::Bool(args().iter().any(|e| truth(&evaluate(template, given, e)))),
        "Fn::And" => Value::Bool(args().iter().all(|e| truth(&evaluate(template, given, e)))),
        // Over a list parameter given as "a,b" (as `sam deploy` takes it).
        "Fn::Join" => {
            let separator = args()[0].as_str().unwrap();
            Value::from(list(&evaluate(template, given, &args()[1])).join(separator))
        }
        // A rule function: every member of a list parameter equals a string.
        "Fn::EachMemberEquals" => {
            let value = evaluate(template, given, &args()[1]);
            let members = list(&evaluate(template, given, &args()[0]));
            Value::Bool(members.iter().all(|m| value == m.as_str()))
        }
        "Fn::If" => {
            let name = args()[0].as_str().unwrap();
            let holds = truth(&evaluate(template, given, &json!({ "Condition": name })));
            resolve(template, given, &args()[if holds { 1 } else { 2 }])
        }
        other => panic!("{other} is not evaluated here"),
    }
}

/// `value` with its parameter references and `Fn::If`s resolved, as
/// CloudFormation resolves them at deploy time; other functions are kept.
pub fn resolve(template: &Value, given: &Value, value: &Value) -> Value {
    match value {
        Value::Object(object) if object.len() == 1 => {
            let (function, arguments) = object.iter().next().unwrap();
            let is_parameter = function == "Ref"
                && arguments
                    .as_str()
                    .is_some_and(|name| template["Parameters"].get(name).is_some());
            if is_parameter || function == "Fn::If" {
                evaluate(template, given, value)
            } else if function == "Fn::FindInMap" {
                let path = resolve(template, given, arguments);
                let key = |i: usize| match &path[i] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                template["Mappings"][key(0)][key(1)][key(2)].clone()
            } else {
                json!({ function: resolve(template, given, arguments) })
            }
        }
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(k, v)| (k.clone(), resolve(template, given, v)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| resolve(template, given, v)).collect())
        }
        other => other.clone(),
    }
}

/// The resources CloudFormation would create: those without a condition
/// and those whose condition holds.
pub fn created(template: &Value, given: &Value) -> Map<String, Value> {
    template["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, resource)| match resource.get("Condition") {
            None => true,
            Some(condition) => {
                evaluate(template, given, &json!({ "Condition": condition })) == json!(true)
            }
        })
        .map(|(name, resource)| (name.clone(), resolve(template, given, resource)))
        .collect()
}

/// A list parameter's members: a JSON list, or a comma-separated string as
/// CloudFormation takes a `CommaDelimitedList`.
fn list(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect(),
        Value::String(s) => s.split(',').map(str::to_owned).collect(),
        other => panic!("{other} is not a list"),
    }
}

/// The statements of every policy of the function's role among `resources`
/// (a transformed template's, as `created` gives them): its inline
/// policies and the policies attached to it. The role is the standard
/// function's or the Managed Instances one's, whichever was created.
pub fn function_statements(resources: &Map<String, Value>) -> Vec<Value> {
    let (role_name, role) = resources
        .iter()
        .find(|(name, r)| r["Type"] == "AWS::IAM::Role" && name.ends_with("FunctionRole"))
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
