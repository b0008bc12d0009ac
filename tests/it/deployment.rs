//! template.yaml through AWS's own tools, offline: the SAM transform of the
//! `aws-sam-translator` package (what `sam deploy` hands CloudFormation) for
//! every combination of the auth parameters, the template's conditions and
//! rules evaluated on the result, and cfn-lint on each transformed template.
//! What only CloudFormation and a real account can show is listed in
//! docs/deployment.md.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value, json};

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn venv_tool(name: &str) -> PathBuf {
    let tool = project().join(".venv/bin").join(name);
    assert!(
        tool.exists(),
        "{name} is not installed: run scripts/test.sh"
    );
    tool
}

/// The CloudFormation template SAM makes of template.yaml with `parameters`.
fn transformed(parameters: &Value, output: &Path) -> Value {
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
fn parameter(template: &Value, given: &Value, name: &str) -> Value {
    given
        .get(name)
        .cloned()
        .unwrap_or_else(|| template["Parameters"][name]["Default"].clone())
}

/// Evaluates the condition functions CloudFormation evaluates at deploy
/// time (in `Conditions` and `Rules`), over parameter values.
fn evaluate(template: &Value, given: &Value, expression: &Value) -> Value {
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
        other => panic!("{other} is not evaluated here"),
    }
}

/// The resources CloudFormation would create: those without a condition
/// and those whose condition holds.
fn created(template: &Value, given: &Value) -> Map<String, Value> {
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
        .map(|(name, resource)| (name.clone(), resource.clone()))
        .collect()
}

/// The rules that would stop the deployment: those whose condition holds and
/// one of whose assertions does not.
fn refusing_rules(template: &Value, given: &Value) -> Vec<String> {
    let Some(rules) = template.get("Rules").and_then(Value::as_object) else {
        return Vec::new();
    };
    rules
        .iter()
        .filter(|(_, rule)| {
            rule.get("RuleCondition")
                .is_none_or(|c| evaluate(template, given, c) == json!(true))
                && rule["Assertions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|a| evaluate(template, given, &a["Assert"]) != json!(true))
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Every permission that lets anyone (`Principal: "*"`) invoke the function.
fn public_permissions(resources: &Map<String, Value>) -> Vec<Value> {
    let mut found: Vec<Value> = resources
        .values()
        .filter(|r| r["Type"] == "AWS::Lambda::Permission" && r["Properties"]["Principal"] == "*")
        .map(|r| {
            let mut properties = r["Properties"].clone();
            properties.as_object_mut().unwrap().remove("FunctionName");
            properties
        })
        .collect();
    found.sort_by_key(Value::to_string);
    found
}

#[test]
fn every_auth_mode_transforms_to_a_url_that_works_and_is_never_open() {
    let dir = tempfile::tempdir().unwrap();
    let digest = "a".repeat(64);
    let mut outputs = Vec::new();
    for auth_type in ["AWS_IAM", "NONE"] {
        for token in ["", digest.as_str()] {
            for jwks in ["", "https://issuer.example/.well-known/jwks.json"] {
                let given = json!({
                    "FunctionUrlAuthType": auth_type,
                    "AuthTokenSha256": token,
                    "JwksUrl": jwks,
                    "JwtIssuer": if jwks.is_empty() { "" } else { "https://issuer.example/" },
                    "JwtAudience": if jwks.is_empty() { "" } else { "https://fn.example/mcp" },
                });
                let output = dir.path().join(format!("{}.json", outputs.len()));
                let template = transformed(&given, &output);
                outputs.push(output);
                let case = format!("{auth_type}, token {:?}, jwks {jwks:?}", !token.is_empty());

                let refused = refusing_rules(&template, &given);
                let open = auth_type == "NONE" && token.is_empty() && jwks.is_empty();
                assert_eq!(
                    refused,
                    if open {
                        vec!["PublicUrlNeedsBearerAuth".to_owned()]
                    } else {
                        vec![]
                    },
                    "{case}: the rules refuse exactly an open URL"
                );

                let resources = created(&template, &given);
                let url = resources
                    .values()
                    .find(|r| r["Type"] == "AWS::Lambda::Url")
                    .expect("a function URL");
                assert_eq!(
                    evaluate(&template, &given, &url["Properties"]["AuthType"]),
                    json!(auth_type),
                    "{case}"
                );
                let expected = if auth_type == "NONE" {
                    vec![
                        json!({"Action": "lambda:InvokeFunction", "InvokedViaFunctionUrl": true, "Principal": "*"}),
                        json!({"Action": "lambda:InvokeFunctionUrl", "FunctionUrlAuthType": "NONE", "Principal": "*"}),
                    ]
                } else {
                    vec![]
                };
                assert_eq!(
                    public_permissions(&resources),
                    expected,
                    "{case}: a public URL needs both permissions; an IAM one none"
                );
            }
        }
    }
    let lint = Command::new(venv_tool("cfn-lint"))
        .args(&outputs)
        .output()
        .unwrap();
    assert!(
        lint.status.success(),
        "cfn-lint on the transformed templates: {}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
}

/// cargo-lambda (and so `sam build`) injects `lto`, `codegen-units`,
/// `panic = "abort"` and `strip = "symbols"` into a release build whose
/// profile leaves them unset: the deployed binary would not be the tested
/// one, and a panic anywhere would end every invocation of the instance.
#[test]
fn the_release_profile_sets_every_key_cargo_lambda_would_inject() {
    let manifest: toml_like::Manifest = toml_like::read(&project().join("Cargo.toml"));
    let release = manifest.section("profile.release");
    for key in ["lto", "codegen-units", "panic", "strip", "debug"] {
        assert!(
            release.contains_key(key),
            "[profile.release] leaves {key} to cargo-lambda"
        );
    }
    assert_eq!(release["panic"], "\"unwind\"", "tests run with unwinding");
}

/// Just enough of TOML to read one section's `key = value` lines (the
/// project carries no TOML parser).
mod toml_like {
    use std::collections::BTreeMap;
    use std::path::Path;

    pub struct Manifest(String);

    pub fn read(path: &Path) -> Manifest {
        Manifest(std::fs::read_to_string(path).unwrap())
    }

    impl Manifest {
        /// `key` → raw value of the lines under `[name]`, comments dropped.
        pub fn section(&self, name: &str) -> BTreeMap<String, String> {
            let header = format!("[{name}]");
            self.0
                .lines()
                .skip_while(|line| line.trim() != header)
                .skip(1)
                .take_while(|line| !line.trim_start().starts_with('['))
                .filter_map(|line| {
                    let line = line.split('#').next()?.trim();
                    let (key, value) = line.split_once('=')?;
                    Some((key.trim().to_owned(), value.trim().to_owned()))
                })
                .collect()
        }
    }
}
