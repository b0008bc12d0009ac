//! template.yaml through AWS's own tools, offline: the SAM transform of the
//! `aws-sam-translator` package (what `sam deploy` hands CloudFormation) for
//! every combination of the auth parameters, the template's conditions and
//! rules evaluated on the result, and cfn-lint on each transformed template.
//! What only CloudFormation and a real account can show is listed in
//! docs/deployment.md.

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::common::sam::{cfn_lint, created, evaluate, function_statements, resolve, transformed};

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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
    cfn_lint(&outputs);
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

/// What agents cannot recreate outlives the stack and mistakes: the bucket
/// and the log, heads and tag tables are retained and protected, the bucket
/// takes TLS only, oversized execution parts expire with their records,
/// heaps expire only when asked to, and log lines have a retention.
#[test]
fn data_is_retained_and_costs_stop_growing() {
    let dir = tempfile::tempdir().unwrap();
    let execution_ttl_days = mcp_v8_lambda::config::Config::from_lookup(|_| None)
        .unwrap()
        .stores
        .execution_ttl_secs
        / 86_400;
    for (retention, log_retention) in [(0, 0), (30, 45)] {
        let given = json!({
            "HeapRetentionDays": retention,
            "SessionLogRetentionDays": log_retention,
            "LogRetentionDays": 30,
        });
        let template = transformed(&given, &dir.path().join(format!("{retention}.json")));
        let resources = created(&template, &given);

        for name in [
            "HeapBucket",
            "SessionLogTable",
            "SessionHeadsTable",
            "SessionIndexTable",
            "HeapTagsTable",
            "HeapTagIndexTable",
        ] {
            let resource = &resources[name];
            assert_eq!(resource["DeletionPolicy"], "Retain", "{name}");
            assert_eq!(resource["UpdateReplacePolicy"], "Retain", "{name}");
            if name != "HeapBucket" {
                assert_eq!(
                    resource["Properties"]["DeletionProtectionEnabled"], true,
                    "{name}"
                );
            }
        }

        let tls_only = resources
            .values()
            .filter(|r| r["Type"] == "AWS::S3::BucketPolicy")
            .flat_map(|r| {
                r["Properties"]["PolicyDocument"]["Statement"]
                    .as_array()
                    .unwrap()
                    .clone()
            })
            .any(|s| {
                s["Effect"] == "Deny"
                    && s["Condition"]["Bool"]["aws:SecureTransport"] == "false"
                    && s["Action"] == "s3:*"
            });
        assert!(tls_only, "a bucket policy refuses requests without TLS");

        let rules = resources["HeapBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
            .as_array()
            .unwrap()
            .clone();
        let enabled = |prefix: &str| {
            rules
                .iter()
                .find(|r| r["Prefix"] == prefix && r["Status"] == "Enabled")
                .and_then(|r| r["ExpirationInDays"].as_i64())
        };
        let overflow_days = enabled("overflow/executions/").expect("execution overflow expires");
        assert!(
            overflow_days > execution_ttl_days,
            "{overflow_days} days, after the records"
        );
        let texts_days = enabled("records/").expect("runs' kept texts expire");
        assert!(
            texts_days > execution_ttl_days,
            "{texts_days} days, after the records that name them"
        );
        assert_eq!(
            enabled("overflow/"),
            None,
            "session-log overflow is kept with the log"
        );
        for digit in "0123456789abcdef".chars() {
            let days = enabled(&digit.to_string());
            assert_eq!(
                days,
                (retention > 0).then_some(retention),
                "heaps under {digit}"
            );
        }
        assert_eq!(
            enabled("tenants/"),
            (retention > 0).then_some(retention),
            "authenticated tenants' heaps"
        );
        assert_eq!(
            enabled("chunks/"),
            (retention > 0).then_some(retention + 1),
            "heaps' chunks outlive them by a day"
        );
        // /work objects too, those tagged for it only: untagged ones, from
        // before collection, may be named by retained heaps.
        let work = rules
            .iter()
            .find(|r| r["Prefix"] == "work/")
            .expect("a rule for /work objects");
        assert_eq!(
            enabled("work/"),
            (retention > 0).then_some(retention + 1),
            "/work objects outlive the heaps naming them by a day"
        );
        let tag = &work["TagFilters"][0];
        assert_eq!(
            format!(
                "{}={}",
                tag["Key"].as_str().unwrap(),
                tag["Value"].as_str().unwrap()
            ),
            mcp_v8_lambda::files::EXPIRES_TAG
        );
        // Session-log overflow goes with the log: only with a log retention.
        let expiring_log_overflow: Vec<i64> = rules
            .iter()
            .filter(|r| {
                r["Status"] == "Enabled"
                    && "overflow/session-log/x".starts_with(r["Prefix"].as_str().unwrap_or(""))
            })
            .filter_map(|r| r["ExpirationInDays"].as_i64())
            .collect();
        let expected: Vec<i64> = if log_retention > 0 {
            vec![log_retention]
        } else {
            vec![]
        };
        assert_eq!(expiring_log_overflow, expected);
        for table in ["SessionLogTable", "SessionHeadsTable"] {
            let ttl = &resources[table]["Properties"]["TimeToLiveSpecification"];
            assert_eq!(ttl["AttributeName"], "expires_at", "{table}");
            assert_eq!(ttl["Enabled"], log_retention > 0, "{table}");
        }

        let log_group = resources
            .values()
            .find(|r| r["Type"] == "AWS::Logs::LogGroup")
            .expect("a log group");
        assert_eq!(log_group["Properties"]["RetentionInDays"], 30);
        let function = resources
            .values()
            .find(|r| r["Type"] == "AWS::Lambda::Function")
            .unwrap();
        assert!(
            function["Properties"]["LoggingConfig"]["LogGroup"].is_object(),
            "the function logs to that group"
        );
    }
}

/// On AWS a GET of a missing object is 404 only to a caller that may list
/// the bucket, and 403 AccessDenied otherwise, which would fail run_js with
/// an unknown heap instead of starting fresh. moto does not model that
/// rule, so the grant is checked where it is written: the transformed
/// template's role, and the policy for the cargo-lambda route.
#[test]
fn every_policy_lets_a_missing_heap_be_a_404() {
    let dir = tempfile::tempdir().unwrap();
    let template = transformed(&json!({}), &dir.path().join("t.json"));
    let statements = function_statements(&created(&template, &json!({})));
    let lists_the_bucket = |statements: &[Value], bucket: &Value| {
        statements.iter().any(|s| {
            s["Effect"] == "Allow"
                && s["Action"].to_string().contains("\"s3:ListBucket\"")
                && s["Resource"] == *bucket
        })
    };
    assert!(
        lists_the_bucket(&statements, &json!({"Fn::GetAtt": ["HeapBucket", "Arn"]})),
        "{statements:#?}"
    );
    let policy: Value = serde_json::from_str(
        &std::fs::read_to_string(project().join("infra/policy.json")).unwrap(),
    )
    .unwrap();
    assert!(lists_the_bucket(
        policy["Statement"].as_array().unwrap(),
        &json!("arn:aws:s3:::BUCKET")
    ));
}

/// docs/deployment.md documents every parameter a user is asked for.
#[test]
fn the_deployment_guide_lists_every_template_parameter() {
    let guide = std::fs::read_to_string(project().join("docs/deployment.md")).unwrap();
    let template: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(project().join("template.yaml")).unwrap())
            .unwrap();
    let missing: Vec<String> = template["Parameters"]
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| k.as_str().unwrap().to_owned())
        .filter(|name| !guide.contains(&format!("`{name}`")))
        .collect();
    assert!(missing.is_empty(), "not in docs/deployment.md: {missing:?}");
}

/// The URL's invoke mode and the function's `MCP_V8_INVOKE_MODE` come from
/// one parameter, so the function streams exactly when its URL does.
#[test]
fn the_function_streams_exactly_when_its_url_does() {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["RESPONSE_STREAM", "BUFFERED"] {
        let given = json!({ "InvokeMode": mode });
        let template = transformed(&given, &dir.path().join(format!("{mode}.json")));
        let resources = created(&template, &given);
        let url = resources
            .values()
            .find(|r| r["Type"] == "AWS::Lambda::Url")
            .expect("a function URL");
        assert_eq!(
            evaluate(&template, &given, &url["Properties"]["InvokeMode"]),
            json!(mode)
        );
        let function = resources
            .values()
            .find(|r| r["Type"] == "AWS::Lambda::Function")
            .expect("the function");
        assert_eq!(
            evaluate(
                &template,
                &given,
                &function["Properties"]["Environment"]["Variables"]["MCP_V8_INVOKE_MODE"]
            ),
            json!(mode)
        );
    }
    let default = yaml_default("InvokeMode");
    assert_eq!(default, "RESPONSE_STREAM");
}

fn yaml_default(parameter: &str) -> String {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("template.yaml"),
    )
    .unwrap();
    let template: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    template["Parameters"][parameter]["Default"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Code mode's credentials come from Secrets Manager: the parameter is a
/// secret's name, the variable a dynamic reference CloudFormation resolves
/// at deploy time, and without the parameter the variable is not set.
#[test]
fn upstream_mcp_servers_come_from_a_secret_never_a_parameter_value() {
    let dir = tempfile::tempdir().unwrap();
    for (given, expected) in [
        (
            json!({ "McpServersSecret": "prod/mcp-upstreams" }),
            json!({ "Fn::Sub": "{{resolve:secretsmanager:${McpServersSecret}:SecretString}}" }),
        ),
        (json!({}), json!({ "Ref": "AWS::NoValue" })),
    ] {
        let path = dir
            .path()
            .join(format!("{}.json", given.as_object().unwrap().len()));
        let template = transformed(&given, &path);
        let resources = created(&template, &given);
        let function = resources
            .values()
            .find(|r| r["Type"] == "AWS::Lambda::Function")
            .expect("the function");
        assert_eq!(
            function["Properties"]["Environment"]["Variables"]["MCP_V8_MCP_SERVERS"], expected,
            "{given}"
        );
    }
    assert_eq!(yaml_default("McpServersSecret"), "");
}

/// `ManagedInstancesSubnetIds` moves the function to Lambda Managed
/// Instances: a capacity provider in those subnets, the function with
/// `CapacityProviderConfig` naming it behind a published alias, its URL on
/// that alias, tasks handed to the version that runs; no standard function.
/// Without it, none of that is created. A rule refuses subnets without
/// security groups; cfn-lint passes on both variants.
#[test]
fn managed_instances_are_one_parameter_away_and_absent_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let functions = |resources: &Map<String, Value>| -> Vec<String> {
        resources
            .iter()
            .filter(|(_, r)| r["Type"] == "AWS::Lambda::Function")
            .map(|(name, _)| name.clone())
            .collect()
    };
    let of_type = |resources: &Map<String, Value>, kind: &str| -> Vec<Value> {
        resources
            .values()
            .filter(|r| r["Type"] == kind)
            .cloned()
            .collect()
    };

    let standard = json!({});
    let standard_path = dir.path().join("standard.json");
    let template = transformed(&standard, &standard_path);
    let resources = created(&template, &standard);
    assert_eq!(functions(&resources), ["McpFunction"]);
    assert!(
        resources["McpFunction"]["Properties"]
            .get("CapacityProviderConfig")
            .is_none()
    );
    for kind in [
        "AWS::Lambda::CapacityProvider",
        "AWS::Lambda::Version",
        "AWS::Lambda::Alias",
    ] {
        assert!(of_type(&resources, kind).is_empty(), "{kind} by default");
    }
    assert!(refusing_rules(&template, &standard).is_empty());

    let managed = json!({
        "ManagedInstancesSubnetIds": "subnet-a,subnet-b",
        "ManagedInstancesSecurityGroupIds": "sg-c",
        "MemorySize": 4096,
    });
    let managed_path = dir.path().join("managed.json");
    let template = transformed(&managed, &managed_path);
    let resources = created(&template, &managed);
    assert_eq!(functions(&resources), ["McpManagedFunction"]);
    assert_eq!(
        resources["McpManagedFunction"]["Properties"]["CapacityProviderConfig"],
        json!({"LambdaManagedInstancesCapacityProviderConfig": {
            "CapacityProviderArn": {"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:capacity-provider:${CapacityProvider}"},
            "PerExecutionEnvironmentMaxConcurrency": 4,
        }})
    );
    let providers = of_type(&resources, "AWS::Lambda::CapacityProvider");
    assert_eq!(providers.len(), 1);
    assert_eq!(
        providers[0]["Properties"]["VpcConfig"]["SubnetIds"],
        json!("subnet-a,subnet-b")
    );
    let aliases = of_type(&resources, "AWS::Lambda::Alias");
    assert_eq!(aliases.len(), 1, "a published version behind an alias");
    let urls = of_type(&resources, "AWS::Lambda::Url");
    assert_eq!(
        urls[0]["Properties"]["TargetFunctionArn"],
        json!({"Ref": "McpManagedFunctionAliaslive"}),
        "the URL invokes the published alias"
    );
    let hand_off: Vec<Value> = function_statements(&resources)
        .into_iter()
        .filter(|s| s["Action"].to_string().contains("lambda:"))
        .collect();
    assert_eq!(
        hand_off,
        [json!({"Sid": "HandTasksToItself", "Effect": "Allow",
            "Action": ["lambda:InvokeFunction"],
            "Resource": {"Fn::Sub": "${McpManagedFunction.Arn}:*"}})],
        "tasks go to the function's versions, nothing else"
    );
    assert!(refusing_rules(&template, &managed).is_empty());
    let mut no_groups = managed.clone();
    no_groups["ManagedInstancesSecurityGroupIds"] = json!("");
    assert_eq!(
        refusing_rules(&template, &no_groups),
        ["ManagedInstancesNeedSecurityGroups"]
    );

    cfn_lint(&[&standard_path, &managed_path]);
}

/// An operator's skills layer: given, both forms of the function carry the
/// layer and read /opt/skills; not given, neither has a layer or the
/// variable (the built-in skills only).
#[test]
fn a_skills_layer_is_attached_and_read_where_given() {
    let dir = tempfile::tempdir().unwrap();
    let arn = "arn:aws:lambda:us-east-1:123456789012:layer:team-skills:3";
    for (given, with_layer) in [
        (json!({"SkillsLayerArn": arn}), true),
        (json!({}), false),
        (
            json!({"SkillsLayerArn": arn, "ManagedInstancesSubnetIds": "subnet-1",
                   "ManagedInstancesSecurityGroupIds": "sg-1"}),
            true,
        ),
    ] {
        let output = dir.path().join(format!("{}.json", given.to_string().len()));
        let template = transformed(&given, &output);
        let resources = created(&template, &given);
        let function = resources
            .values()
            .find(|r| r["Type"] == "AWS::Lambda::Function")
            .expect("a function");
        let properties = &function["Properties"];
        // What CloudFormation deploys: AWS::NoValue drops the element.
        let no_value = json!({"Ref": "AWS::NoValue"});
        let layers: Vec<Value> = resolve(&template, &given, &properties["Layers"])
            .as_array()
            .expect("a list of layers")
            .iter()
            .filter(|layer| **layer != no_value)
            .cloned()
            .collect();
        let skills_dir = resolve(
            &template,
            &given,
            &properties["Environment"]["Variables"]["MCP_V8_SKILLS_DIR"],
        );
        if with_layer {
            assert_eq!(layers, [json!(arn)], "{given}");
            assert_eq!(skills_dir, json!("/opt/skills"), "{given}");
        } else {
            assert!(layers.is_empty(), "{layers:?}");
            assert!(
                skills_dir.is_null() || skills_dir == no_value,
                "{skills_dir}"
            );
        }
    }
}

/// The dashboard and the four alarms come with the stack unless
/// `Monitoring=false`, on either kind of function; they notify an SNS topic
/// only where `AlarmEmail` names an address. The dashboard's body is JSON
/// once CloudFormation has put the names in, and cfn-lint passes each
/// transformed template.
#[test]
fn monitoring_is_on_by_default_notifies_by_email_and_turns_off() {
    let dir = tempfile::tempdir().unwrap();
    let placeholder = regex::Regex::new(r"\$\{[A-Za-z:.]+\}").unwrap();
    let managed = json!({"ManagedInstancesSubnetIds": "subnet-1",
                         "ManagedInstancesSecurityGroupIds": "sg-1"});
    let mut outputs = Vec::new();
    for (given, monitored, notified) in [
        (json!({}), true, false),
        (json!({"AlarmEmail": "ops@example.com"}), true, true),
        (
            json!({"Monitoring": "false", "AlarmEmail": "ops@example.com"}),
            false,
            false,
        ),
        (managed, true, false),
    ] {
        let output = dir
            .path()
            .join(format!("monitoring-{}.json", outputs.len()));
        let template = transformed(&given, &output);
        outputs.push(output);
        let resources = created(&template, &given);
        let of_type = |kind: &str| -> Vec<&Value> {
            resources.values().filter(|r| r["Type"] == kind).collect()
        };
        let alarms = of_type("AWS::CloudWatch::Alarm");
        assert_eq!(alarms.len(), if monitored { 4 } else { 0 }, "{given}");
        assert_eq!(
            of_type("AWS::CloudWatch::Dashboard").len(),
            usize::from(monitored),
            "{given}"
        );
        assert_eq!(
            of_type("AWS::SNS::Topic").len(),
            usize::from(notified),
            "{given}"
        );
        for alarm in &alarms {
            let actions = resolve(&template, &given, &alarm["Properties"]["AlarmActions"]);
            if notified {
                assert_eq!(actions, json!([{"Ref": "AlarmTopic"}]), "{given}");
            } else {
                assert_eq!(actions, json!({"Ref": "AWS::NoValue"}), "{given}");
            }
        }
        if !monitored {
            continue;
        }
        // The alarms watch the function this stack deploys.
        let function = evaluate(
            &template,
            &given,
            &json!({"Fn::If": ["OnLambda", "McpFunction", "McpManagedFunction"]}),
        );
        assert!(
            resources.contains_key(function.as_str().unwrap()),
            "{given}"
        );
        let body = &template["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"][0];
        let filled = placeholder.replace_all(body.as_str().unwrap(), "name");
        let dashboard: Value = serde_json::from_str(&filled)
            .unwrap_or_else(|e| panic!("the dashboard body is not JSON ({e}): {filled}"));
        let widgets = dashboard["widgets"].as_array().unwrap();
        assert_eq!(widgets.len(), 7);
        for metric in [
            "mcp_v8_runs_total",
            "mcp_v8_run_duration_seconds",
            "mcp_v8_refused_requests_total",
            "mcp_v8_cold_starts_total",
        ] {
            assert!(body.as_str().unwrap().contains(metric), "{metric}");
        }
    }
    cfn_lint(&outputs);
}
