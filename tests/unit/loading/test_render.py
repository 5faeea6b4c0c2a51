"""Templating: Polyaxon's typing of rendered text, strict undefined names, the sandbox."""

from __future__ import annotations

import pytest

from polyaxon_prefect.loading._render import (
    ParamValue,
    TemplateError,
    as_str,
    build_context,
    map_format,
    render_bool,
    render_value,
)


@pytest.fixture
def context() -> dict:
    return build_context(
        {
            "lr": ParamValue(0.01, "float"),
            "layers": ParamValue([1, 2], "List[int]"),
            "n": ParamValue(5, "int"),
            "name": ParamValue("resnet", "str"),
            "check": ParamValue(True, "bool"),
            "verbose": ParamValue(True, "bool", is_flag=True),
            "quiet": ParamValue(False, "bool", is_flag=True),
        },
        globals={"uuid": "abc123", "artifacts_path": "/plx-context/artifacts"},
        connections={"registry": {"url": "registry.example.com"}},
    )


# --- typing of rendered values (spec 9) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ lr }}", 0.01),
        ("{{ layers }}", [1, 2]),
        ("n={{ n }}", "n=5"),
        ("{{ lr }}0", 0.01),  # "0.010" is literal-eval'd
        ("{{ n }}", 5),
        ("{{ check }}", True),
        ("{{ name }}", "resnet"),
        ("{{ '01' }}", "01"),  # not a valid Python literal: stays text
        ("{{ n > 3 }}", True),
        ("{{ none_value | default(None) }}", None),
        ("{{ (1, 2) }}", [1, 2]),  # tuples come back as YAML lists
        ("{{ '{1, 2}' }}", "{1, 2}"),  # a set is not a YAML value: stays text
        ("{{ '1j' }}", "1j"),
        ("{{ {'a': n} }}", {"a": 5}),
        ("{% if n > 3 %}big{% else %}small{% endif %}", "big"),
    ],
)
def test_rendered_strings_are_read_back_as_literals(context, template, expected):
    result = render_value(template, context)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize("text", ["True", "01", "[1, 2]", "0.01", "None", "n=5"])
def test_untemplated_strings_keep_the_type_yaml_gave_them(context, text):
    assert render_value(text, context) == text


def test_non_strings_pass_through(context):
    assert render_value(3, context) == 3
    assert render_value(None, context) is None
    assert render_value(True, context) is True


def test_render_recurses_into_dicts_and_lists_without_touching_the_input(context):
    value = {"args": ["--lr={{ lr }}", "{{ n }}"], "nested": {"x": "{{ layers }}"}, "k": 1}
    snapshot = {"args": ["--lr={{ lr }}", "{{ n }}"], "nested": {"x": "{{ layers }}"}, "k": 1}
    assert render_value(value, context) == {
        "args": ["--lr=0.01", 5],
        "nested": {"x": [1, 2]},
        "k": 1,
    }
    assert value == snapshot


def test_rendered_text_is_not_rendered_again():
    ctx = build_context({"x": ParamValue("{{ secret }}", "str")})
    assert render_value("{{ x }}", ctx) == "{{ secret }}"


def test_namespaces(context):
    assert render_value("{{ globals.uuid }}", context) == "abc123"
    assert render_value("{{ connections['registry'].url }}", context) == "registry.example.com"
    assert render_value("{{ connections.registry.url }}", context) == "registry.example.com"
    assert render_value("{{ params.lr.value }}", context) == 0.01
    assert render_value("{{ params.lr.type }}", context) == "float"
    assert render_value("{{ params.layers.as_str }}", context) == [1, 2]
    assert render_value("x{{ params.layers.as_str }}", context) == "x[1,2]"
    assert render_value("{{ params.check.as_arg }}", context) == "--check=true"
    assert render_value("{{ globals }}", context) == {
        "uuid": "abc123",
        "artifacts_path": "/plx-context/artifacts",
    }
    assert render_value("json={{ globals | tojson }}", context) == (
        'json={"artifacts_path": "/plx-context/artifacts", "uuid": "abc123"}'
    )


def test_params_as_args_lists_every_non_empty_arg(context):
    assert render_value("{{ params.as_args }}", context) == [
        "--lr=0.01",
        "--layers=[1,2]",
        "--n=5",
        "--name=resnet",
        "--check=true",
        "--verbose",
    ]


def test_dag_and_ops_namespaces():
    ctx = build_context(
        {},
        dag_inputs={"data": "s3://bucket/data"},
        ops={"train": {"outputs": {"loss": 0.25}, "inputs": {"lr": 0.1}}},
    )
    assert render_value("{{ dag.inputs.data }}", ctx) == "s3://bucket/data"
    assert render_value("{{ ops.train.outputs.loss }}", ctx) == 0.25
    with pytest.raises(
        TemplateError, match=r"undefined name `ops\.train\.outputs\.acc`.*has: loss"
    ):
        render_value("{{ ops.train.outputs.acc }}", ctx)


def test_dag_namespace_is_absent_outside_a_dag(context):
    with pytest.raises(TemplateError, match="undefined name `dag`"):
        render_value("{{ dag.inputs.x }}", context)


def test_a_param_named_like_a_dict_method_is_reachable():
    ctx = build_context({"values": ParamValue(3, "int"), "items": ParamValue("a", "str")})
    assert render_value("{{ params.values.value }}", ctx) == 3
    assert render_value("{{ params.items.value }}", ctx) == "a"


def test_reserved_param_names_are_refused():
    with pytest.raises(TemplateError, match="param name `globals` collides"):
        build_context({"globals": ParamValue(1, "int")})


def test_map_format_filter(context):
    assert render_value("{{ layers | map('map_format', '--l=%s') | join(' ') }}", context) == (
        "--l=1 --l=2"
    )
    assert map_format(3, "--x=%(v)s", "v") == "--x=3"


# --- errors -------------------------------------------------------------------------------------


def test_undefined_name_is_an_error_that_lists_what_exists():
    ctx = build_context({"epochs": ParamValue(10, "int"), "dropout": ParamValue(0.2, "float")})
    with pytest.raises(TemplateError) as info:
        render_value("{{ lr * 2 }}", ctx)
    assert info.value.message == (
        "undefined name `lr` in `{{ lr * 2 }}`; available: dropout, epochs, globals, params"
    )
    assert info.value.template == "{{ lr * 2 }}"


@pytest.mark.parametrize("template", ["x-{{ nope }}-y", "{% if nope %}a{% endif %}", "{{ nope }}"])
def test_undefined_names_never_render_empty(context, template):
    with pytest.raises(TemplateError, match="undefined name `nope`"):
        render_value(template, context)


def test_undefined_key_in_a_namespace_names_the_namespace(context):
    with pytest.raises(
        TemplateError, match=r"undefined name `globals\.nope`.*globals has: artifacts_path, uuid"
    ):
        render_value("{{ globals.nope }}", context)
    with pytest.raises(TemplateError, match=r"undefined name `params\.lrr`"):
        render_value("{{ params.lrr.value }}", context)


def test_default_filter_and_defined_test_still_work(context):
    assert render_value("{{ nope | default(3) }}", context) == 3
    assert render_value("{{ nope is defined }}", context) is False


def test_error_path_points_at_the_failing_item(context):
    with pytest.raises(TemplateError) as info:
        render_value({"container": {"args": ["ok", "{{ missing }}"]}}, context)
    assert info.value.path == ("container", "args", 1)
    problem = info.value.problem(("run",))
    assert problem.path == ("run", "container", "args", 1)
    assert problem.rule == "template"


def test_syntax_errors_are_template_errors(context):
    with pytest.raises(TemplateError, match=r"invalid template syntax in `\{\{ lr `"):
        render_value("{{ lr ", context)


def test_runtime_errors_are_template_errors(context):
    with pytest.raises(TemplateError, match="ZeroDivisionError"):
        render_value("{{ n / 0 }}", context)


def test_template_error_is_a_value_error():
    assert issubclass(TemplateError, ValueError)


# --- sandbox ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "{{ lr.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ name.__class__.__init__.__globals__ }}",
        "{{ params.__class__ }}",
        "{{ layers.__len__() }}",
        "{{ cycler.__init__.__globals__.os }}",
    ],
)
def test_sandbox_blocks_dunder_access(context, template):
    with pytest.raises(TemplateError, match=r"unsafe|undefined"):
        render_value(template, context)


def test_sandbox_refuses_to_mutate_the_context(context):
    with pytest.raises(TemplateError):
        render_value("{{ layers.append(3) }}", context)
    assert render_value("{{ layers }}", context) == [1, 2]


def test_private_attributes_of_namespaces_are_hidden(context):
    with pytest.raises(TemplateError, match="unsafe"):
        render_value("{{ params._data }}", context)


# --- conditions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["y", "yes", "t", "true", "on", "1", "TRUE", "Yes", " On "])
def test_true_words(context, word):
    assert render_bool(word, context) is True


@pytest.mark.parametrize("word", ["n", "no", "f", "false", "off", "0", "FALSE", "No"])
def test_false_words(context, word):
    assert render_bool(word, context) is False


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("{{ n > 3 }}", True),
        ("{{ n > 30 }}", False),
        ("{{ params.check.value }}", True),
        ("{{ 'yes' if lr < 0.1 else 'no' }}", True),
        ("{% if n == 5 %}on{% else %}off{% endif %}", True),
        (True, True),
        (False, False),
    ],
)
def test_templated_conditions(context, expr, expected):
    assert render_bool(expr, context) is expected


@pytest.mark.parametrize("expr", ["{{ n }}", "{{ name }}", "{{ '' }}", "maybe"])
def test_non_boolean_conditions_are_errors(context, expr):
    with pytest.raises(TemplateError, match="conditions must evaluate to a boolean"):
        render_bool(expr, context)


def test_untemplated_expression_gets_a_hint(context):
    with pytest.raises(TemplateError, match=r"write the expression inside `\{\{ \}\}`"):
        render_bool("n > 3", context)


def test_condition_with_undefined_name_is_an_error(context):
    with pytest.raises(TemplateError, match="undefined name `nope`"):
        render_bool("{{ nope == 1 }}", context)


# --- as_str / as_arg (spec 9) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, "true"),
        (False, "false"),
        ([1, 2], "[1,2]"),
        ({"a": 1, "b": [True]}, '{"a":1,"b":[true]}'),
        (0.01, "0.01"),
        ("text", "text"),
        (None, ""),
        (3, "3"),
    ],
)
def test_as_str(value, expected):
    assert as_str(value) == expected


@pytest.mark.parametrize(
    ("param", "expected"),
    [
        (ParamValue(True, "bool"), "--x=true"),  # no isFlag: not `--x`
        (ParamValue(False, "bool"), "--x=false"),
        (ParamValue(True, "bool", is_flag=True), "--x"),
        (ParamValue(False, "bool", is_flag=True), ""),
        (ParamValue(None, "bool", is_flag=True), ""),
        (ParamValue(0.1, "float"), "--x=0.1"),
        (ParamValue(None, "float"), ""),
        (ParamValue([1, 2], "list"), "--x=[1,2]"),
        (ParamValue({"a": 1}, "dict"), '--x={"a":1}'),
        (ParamValue(0.1, "float", arg_format="-lr {{ x }}"), "-lr 0.1"),
        (ParamValue(None, "float", arg_format="-lr {{ x }}"), ""),
        (ParamValue([1, 2], "list", arg_format="{{ x | join(',') }}"), "1,2"),
    ],
)
def test_as_arg(param, expected):
    assert param.as_arg("x") == expected


def test_arg_format_can_only_see_its_own_param():
    param = ParamValue(1, "int", arg_format="--x={{ y }}")
    with pytest.raises(TemplateError, match=r"argFormat of param `x`: undefined name `y`"):
        param.as_arg("x")


def test_flag_and_str_display_values():
    ctx = build_context(
        {
            "on": ParamValue(True, "bool", is_flag=True),
            "off": ParamValue(False, "bool", is_flag=True),
            "tag": ParamValue(12, "str"),
        }
    )
    assert ctx["on"] == "--on"
    assert ctx["off"] == ""
    assert ctx["tag"] == "12"
    assert render_value("python run.py {{ on }} {{ off }}", ctx) == "python run.py --on "
