"""CEL rules type-checked as the API server checks them: the schema's CEL types, and cel-go's checker.

The API server compiles a CRD rule with ``self`` typed by the rule's schema node (apiserver ``cel/common``
``SchemaDeclType``: objects are structs with their properties as fields, lists, maps of strings, formats as
timestamps, durations and bytes, int-or-string as ``dyn``) and the functions of its CEL environment. The cost
estimator (:mod:`nodefleet.apiserver.cel_cost`) needs what that check gives it: the type of every expression
and the overloads every call may resolve to. cel-expr-python's checker cannot give them: it has no struct
types but protobuf messages, which cannot hold a list of lists, and no Kubernetes types. So this module:

- builds :class:`Decl`, the schema's declared type with the sizes the API server estimates for it
  (``maxLength``, ``maxItems``, ``maxProperties``, and for unbounded values the largest request divided by the
  smallest serialized element), as ``SchemaDeclType`` does;
- parses a rule with cel-expr-python (its parser and macros are cel-go's: the same tree), expanding the one
  macro of the API server's environment it lacks, the three-argument ``exists_one``;
- type-checks the tree as cel-go's ``checker`` does (``checker.go``, ``types.go``: overload resolution with
  type parameters and their substitution, the first match's result type or ``dyn``), against
  :data:`DECLARATIONS`, the functions of the API server's environment for CRD rules, each overload with
  cel-go's id.

:data:`DECLARATIONS` is checked against the API server's own environment by tests/test_cel_cost_reference.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from nodefleet.apiserver import cel as crd_cel
from nodefleet.apiserver.cel_ast import Node, parsed_tree, source_positions
from nodefleet.apiserver.formats import is_cel_timestamp, is_go_duration, re2_compile

__all__ = [
    "DECLARATIONS",
    "SELF_TYPE",
    "CheckError",
    "Checked",
    "Decl",
    "Overload",
    "Type",
    "bound",
    "check",
    "renamed",
    "schema_decl",
]

# ---------------------------------------------------------------------------------------------------------
# types (cel-go common/types)
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Type:
    """A CEL type as cel-go's checker holds it: a kind (``int``, ``list``, ``struct``, ``opaque``, ``param``,
    ...), a name (``google.protobuf.Timestamp``, a struct's name, ``optional_type``, a type parameter's) and
    parameters."""

    kind: str
    name: str
    params: tuple[Type, ...] = ()

    def __str__(self) -> str:
        if self.kind == "param":
            return self.name
        short = {"timestamp": "timestamp", "duration": "duration", "null": "null", "error": "!error!"}.get(
            self.kind, self.name
        )
        return f"{short}({', '.join(map(str, self.params))})" if self.params else short


BOOL = Type("bool", "bool")
INT = Type("int", "int")
UINT = Type("uint", "uint")
DOUBLE = Type("double", "double")
STRING = Type("string", "string")
BYTES = Type("bytes", "bytes")
NULL = Type("null", "null_type")
DYN = Type("dyn", "dyn")
ERROR = Type("error", "*error*")
TIMESTAMP = Type("timestamp", "google.protobuf.Timestamp")
DURATION = Type("duration", "google.protobuf.Duration")
TYPE = Type("type", "type")


def list_of(elem: Type) -> Type:
    return Type("list", "list", (elem,))


def map_of(key: Type, value: Type) -> Type:
    return Type("map", "map", (key, value))


def optional_of(value: Type) -> Type:
    return Type("opaque", "optional_type", (value,))


def type_of(value: Type) -> Type:
    return Type("type", "type", (value,))


def _param(name: str) -> Type:
    return Type("param", name)


#: Kubernetes' types of its CEL libraries: structs (``cel.ObjectType``) and opaque types.
_STRUCTS = frozenset(
    {
        "kubernetes.Quantity",
        "kubernetes.URL",
        "kubernetes.Semver",
        "kubernetes.NamedFormat",
        "kubernetes.authorization.Authorizer",
        "kubernetes.authorization.Decision",
        "kubernetes.authorization.GroupCheck",
        "kubernetes.authorization.PathCheck",
        "kubernetes.authorization.ResourceCheck",
    }
)
_OPAQUES = frozenset({"net.IP", "net.CIDR", "optional_type"})
_NAMED = {t.name: t for t in (BOOL, INT, UINT, DOUBLE, STRING, BYTES, DYN)} | {
    "null": NULL,
    "timestamp": TIMESTAMP,
    "duration": DURATION,
    "type": TYPE,
}
_TYPE_PARAMS = frozenset({"A", "B", "K", "V", "T"})


def _parse_type(text: str) -> Type:
    """A type of :data:`DECLARATIONS`' notation: ``list(A)``, ``map(string,V)``, ``kubernetes.Quantity``."""
    name, _, rest = text.partition("(")
    params: list[Type] = []
    if rest:
        depth, start, inner = 0, 0, rest[:-1]
        for i, ch in enumerate(inner):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif ch == "," and depth == 0:
                params.append(_parse_type(inner[start:i]))
                start = i + 1
        params.append(_parse_type(inner[start:]))
    if name in _TYPE_PARAMS:
        return _param(name)
    if name in ("list", "map", "type"):
        return Type(name, name, tuple(params))
    if name in _OPAQUES:
        return Type("opaque", name, tuple(params))
    if name in _STRUCTS:
        return Type("struct", name)
    return _NAMED[name]


def _is_dyn(t: Type) -> bool:
    return t.kind in ("dyn", "any")


def _is_dyn_or_error(t: Type) -> bool:
    return t.kind == "error" or _is_dyn(t)


def _is_optional(t: Type) -> bool:
    return t.kind == "opaque" and t.name == "optional_type"


def _unwrap_optional(t: Type) -> tuple[Type, bool]:
    return (t.params[0], True) if _is_optional(t) else (t, False)


def _assignable_type(t: Type, source: Type) -> bool:
    """cel-go ``Type.IsAssignableType``: whether ``t`` accepts ``source`` (dyn and type parameters accept
    all)."""
    if t == source or t.kind in ("dyn", "any", "param"):
        return True
    if t.kind != source.kind or t.name != source.name or len(t.params) != len(source.params):
        return False
    return all(_assignable_type(a, b) for a, b in zip(t.params, source.params, strict=True))


Mapping_ = dict[Type, Type]


def _equal_or_less_specific(t1: Type, t2: Type) -> bool:
    if _is_dyn(t1) or t1.kind == "param":
        return True
    if _is_dyn(t2) or t2.kind == "param":
        return False
    if t1.kind != t2.kind:
        return False
    if t1.kind == "opaque":
        return (
            t1.name == t2.name
            and len(t1.params) == len(t2.params)
            and all(_equal_or_less_specific(a, b) for a, b in zip(t1.params, t2.params, strict=True))
        )
    if t1.kind in ("list", "map"):
        return all(_equal_or_less_specific(a, b) for a, b in zip(t1.params, t2.params, strict=True))
    if t1.kind == "type":
        return True
    return t1 == t2


def _most_general(t1: Type, t2: Type) -> Type:
    return t1 if _equal_or_less_specific(t1, t2) else t2


def _not_referenced_in(m: Mapping_, t: Type, within: Type) -> bool:
    if t == within:
        return False
    if within.kind == "param":
        found = m.get(within)
        return True if found is None else _not_referenced_in(m, t, found)
    if within.kind in ("opaque", "list", "map", "type"):
        return all(_not_referenced_in(m, t, p) for p in within.params)
    return True


def _valid_substitution(m: Mapping_, t1: Type, t2: Type) -> tuple[bool, bool]:
    if t1.kind == t2.kind and t1 == t2:
        return True, True
    found = m.get(t2)
    if found is not None:
        if t1.kind == found.kind and t1 == found:
            return True, True
        if _internal_assignable(m, t1, found):
            new = _most_general(t1, found)
            if _not_referenced_in(m, t2, new):
                m[t2] = new
            return True, True
        return False, True
    if _not_referenced_in(m, t2, t1):
        m[t2] = t1
        return True, False
    return False, False


def _legacy_nullable(t: Type) -> bool:
    return t.kind in ("opaque", "struct", "any", "duration", "timestamp")


def _internal_assignable(m: Mapping_, t1: Type, t2: Type) -> bool:
    """cel-go ``internalIsAssignable``: whether ``t1`` is assignable to ``t2``, binding type parameters."""
    if t2.kind == "param":
        valid, has_sub = _valid_substitution(m, t1, t2)
        if valid:
            return True
        if has_sub:
            return False
    if t1.kind == "param":
        return _valid_substitution(m, t2, t1)[0]
    if _is_dyn_or_error(t1) or _is_dyn_or_error(t2):
        return True
    if t1.kind == "null":
        return _legacy_nullable(t2) or _assignable_type(t2, NULL)
    if t2.kind == "null":
        return _legacy_nullable(t1) or _assignable_type(t1, NULL)
    if t1.kind in (
        "bool",
        "bytes",
        "double",
        "int",
        "string",
        "uint",
        "any",
        "duration",
        "timestamp",
        "struct",
    ):
        return _assignable_type(t2, t1)
    if t1.kind == "type":
        return t2.kind == "type"
    if t1.kind in ("opaque", "list", "map"):
        return (
            t1.kind == t2.kind
            and t1.name == t2.name
            and len(t1.params) == len(t2.params)
            and all(_internal_assignable(m, a, b) for a, b in zip(t1.params, t2.params, strict=True))
        )
    return False


def _assignable(m: Mapping_, t1: Type, t2: Type) -> Mapping_ | None:
    copy = dict(m)
    return copy if _internal_assignable(copy, t1, t2) else None


def _assignable_list(m: Mapping_, l1: list[Type], l2: list[Type]) -> Mapping_ | None:
    if len(l1) != len(l2):
        return None
    copy = dict(m)
    return copy if all(_internal_assignable(copy, a, b) for a, b in zip(l1, l2, strict=True)) else None


def _substitute(m: Mapping_, t: Type, to_dyn: bool) -> Type:
    found = m.get(t)
    if found is not None:
        return _substitute(m, found, to_dyn)
    if to_dyn and t.kind == "param":
        return DYN
    if t.kind in ("opaque", "list", "map") or (t.kind == "type" and t.params):
        return Type(t.kind, t.name, tuple(_substitute(m, p, to_dyn) for p in t.params))
    return t


# ---------------------------------------------------------------------------------------------------------
# the functions of the API server's CEL environment for CRD rules
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Overload:
    id: str
    member: bool
    args: tuple[Type, ...]
    result: Type
    params: frozenset[Type]


#: Every function of the environment ``k8s.io/apiserver/pkg/cel/environment`` builds for CRD rules (Kubernetes
#: 1.36: cel-go 0.26's standard library, optional types, the strings (version 2), sets, lists (version 3) and
#: two-variable comprehension extensions, and Kubernetes' libraries), one overload a line in the order cel-go
#: tries them: ``function id signature result``, a member overload's signature written ``receiver.(args)``,
#: type parameters as single capitals.
DECLARATIONS = """
!_ logical_not (bool) bool
-_ negate_double (double) double
-_ negate_int64 (int) int
@in in_list (A,list(A)) bool
@in in_map (A,map(A,B)) bool
@not_strictly_false not_strictly_false (bool) bool
@sortByAssociatedKeys list_int_sortByAssociatedKeys list(T).(list(int)) list(T)
@sortByAssociatedKeys list_uint_sortByAssociatedKeys list(T).(list(uint)) list(T)
@sortByAssociatedKeys list_double_sortByAssociatedKeys list(T).(list(double)) list(T)
@sortByAssociatedKeys list_bool_sortByAssociatedKeys list(T).(list(bool)) list(T)
@sortByAssociatedKeys list_google.protobuf.Duration_sortByAssociatedKeys list(T).(list(duration)) list(T)
@sortByAssociatedKeys list_google.protobuf.Timestamp_sortByAssociatedKeys list(T).(list(timestamp)) list(T)
@sortByAssociatedKeys list_string_sortByAssociatedKeys list(T).(list(string)) list(T)
@sortByAssociatedKeys list_bytes_sortByAssociatedKeys list(T).(list(bytes)) list(T)
_!=_ not_equals (A,A) bool
_%_ modulo_int64 (int,int) int
_%_ modulo_uint64 (uint,uint) uint
_&&_ logical_and (bool,bool) bool
_*_ multiply_double (double,double) double
_*_ multiply_int64 (int,int) int
_*_ multiply_uint64 (uint,uint) uint
_+_ add_bytes (bytes,bytes) bytes
_+_ add_double (double,double) double
_+_ add_duration_duration (duration,duration) duration
_+_ add_duration_timestamp (duration,timestamp) timestamp
_+_ add_timestamp_duration (timestamp,duration) timestamp
_+_ add_int64 (int,int) int
_+_ add_list (list(A),list(A)) list(A)
_+_ add_string (string,string) string
_+_ add_uint64 (uint,uint) uint
_-_ subtract_double (double,double) double
_-_ subtract_duration_duration (duration,duration) duration
_-_ subtract_int64 (int,int) int
_-_ subtract_timestamp_duration (timestamp,duration) timestamp
_-_ subtract_timestamp_timestamp (timestamp,timestamp) duration
_-_ subtract_uint64 (uint,uint) uint
_/_ divide_double (double,double) double
_/_ divide_int64 (int,int) int
_/_ divide_uint64 (uint,uint) uint
_<=_ less_equals_bool (bool,bool) bool
_<=_ less_equals_int64 (int,int) bool
_<=_ less_equals_int64_double (int,double) bool
_<=_ less_equals_int64_uint64 (int,uint) bool
_<=_ less_equals_uint64 (uint,uint) bool
_<=_ less_equals_uint64_double (uint,double) bool
_<=_ less_equals_uint64_int64 (uint,int) bool
_<=_ less_equals_double (double,double) bool
_<=_ less_equals_double_int64 (double,int) bool
_<=_ less_equals_double_uint64 (double,uint) bool
_<=_ less_equals_string (string,string) bool
_<=_ less_equals_bytes (bytes,bytes) bool
_<=_ less_equals_timestamp (timestamp,timestamp) bool
_<=_ less_equals_duration (duration,duration) bool
_<_ less_bool (bool,bool) bool
_<_ less_int64 (int,int) bool
_<_ less_int64_double (int,double) bool
_<_ less_int64_uint64 (int,uint) bool
_<_ less_uint64 (uint,uint) bool
_<_ less_uint64_double (uint,double) bool
_<_ less_uint64_int64 (uint,int) bool
_<_ less_double (double,double) bool
_<_ less_double_int64 (double,int) bool
_<_ less_double_uint64 (double,uint) bool
_<_ less_string (string,string) bool
_<_ less_bytes (bytes,bytes) bool
_<_ less_timestamp (timestamp,timestamp) bool
_<_ less_duration (duration,duration) bool
_==_ equals (A,A) bool
_>=_ greater_equals_bool (bool,bool) bool
_>=_ greater_equals_int64 (int,int) bool
_>=_ greater_equals_int64_double (int,double) bool
_>=_ greater_equals_int64_uint64 (int,uint) bool
_>=_ greater_equals_uint64 (uint,uint) bool
_>=_ greater_equals_uint64_double (uint,double) bool
_>=_ greater_equals_uint64_int64 (uint,int) bool
_>=_ greater_equals_double (double,double) bool
_>=_ greater_equals_double_int64 (double,int) bool
_>=_ greater_equals_double_uint64 (double,uint) bool
_>=_ greater_equals_string (string,string) bool
_>=_ greater_equals_bytes (bytes,bytes) bool
_>=_ greater_equals_timestamp (timestamp,timestamp) bool
_>=_ greater_equals_duration (duration,duration) bool
_>_ greater_bool (bool,bool) bool
_>_ greater_int64 (int,int) bool
_>_ greater_int64_double (int,double) bool
_>_ greater_int64_uint64 (int,uint) bool
_>_ greater_uint64 (uint,uint) bool
_>_ greater_uint64_double (uint,double) bool
_>_ greater_uint64_int64 (uint,int) bool
_>_ greater_double (double,double) bool
_>_ greater_double_int64 (double,int) bool
_>_ greater_double_uint64 (double,uint) bool
_>_ greater_string (string,string) bool
_>_ greater_bytes (bytes,bytes) bool
_>_ greater_timestamp (timestamp,timestamp) bool
_>_ greater_duration (duration,duration) bool
_?._ select_optional_field (dyn,string) optional_type(V)
_?_:_ conditional (bool,A,A) A
_[?_] list_optindex_optional_int (list(V),int) optional_type(V)
_[?_] optional_list_optindex_optional_int (optional_type(list(V)),int) optional_type(V)
_[?_] map_optindex_optional_value (map(K,V),K) optional_type(V)
_[?_] optional_map_optindex_optional_value (optional_type(map(K,V)),K) optional_type(V)
_[_] index_list (list(A),int) A
_[_] index_map (map(A,B),A) B
_[_] optional_list_index_int (optional_type(list(V)),int) optional_type(V)
_[_] optional_map_index_value (optional_type(map(K,V)),K) optional_type(V)
__not_strictly_false__ __not_strictly_false__ (bool) bool
_in_ in_list (A,list(A)) bool
_in_ in_map (A,map(A,B)) bool
_||_ logical_or (bool,bool) bool
add quantity_add kubernetes.Quantity.(kubernetes.Quantity) kubernetes.Quantity
add quantity_add_int kubernetes.Quantity.(int) kubernetes.Quantity
allowed decision_allowed kubernetes.authorization.Decision.() bool
asApproximateFloat quantity_get_float kubernetes.Quantity.() double
asInteger quantity_get_int kubernetes.Quantity.() int
bool bool_to_bool (bool) bool
bool string_to_bool (string) bool
bytes bytes_to_bytes (bytes) bytes
bytes string_to_bytes (string) bytes
cel.@mapInsert @mapInsert_map_key_value (map(K,V),K,V) map(K,V)
cel.@mapInsert @mapInsert_map_map (map(K,V),map(K,V)) map(K,V)
charAt string_char_at_int string.(int) string
check pathcheck_check kubernetes.authorization.PathCheck.(string) kubernetes.authorization.Decision
check resourcecheck_check kubernetes.authorization.ResourceCheck.(string) kubernetes.authorization.Decision
cidr string_to_cidr (string) net.CIDR
compareTo quantity_compare_to kubernetes.Quantity.(kubernetes.Quantity) int
compareTo semver_compare_to kubernetes.Semver.(kubernetes.Semver) int
contains contains_string string.(string) bool
containsCIDR cidr_contains_cidr_string net.CIDR.(string) bool
containsCIDR cidr_contains_cidr net.CIDR.(net.CIDR) bool
containsIP cidr_contains_ip_string net.CIDR.(string) bool
containsIP cidr_contains_ip_ip net.CIDR.(net.IP) bool
distinct list_distinct list(T).() list(T)
double double_to_double (double) double
double int64_to_double (int) double
double string_to_double (string) double
double uint64_to_double (uint) double
duration duration_to_duration (duration) duration
duration int64_to_duration (int) duration
duration string_to_duration (string) duration
dyn to_dyn (A) dyn
endsWith ends_with_string string.(string) bool
error decision_error kubernetes.authorization.Decision.() string
errored decision_errored kubernetes.authorization.Decision.() bool
family ip_family net.IP.() int
fieldSelector authorizer_fieldselector kubernetes.authorization.ResourceCheck.(string) kubernetes.authorization.ResourceCheck
find string_find_string string.(string) string
findAll string_find_all_string string.(string) list(string)
findAll string_find_all_string_int string.(string,int) list(string)
first list_first list(V).() optional_type(V)
flatten list_flatten list(list(T)).() list(T)
flatten list_flatten_int list(dyn).(int) list(dyn)
format string_format string.(list(dyn)) string
format.byte format.byte () kubernetes.NamedFormat
format.date format.date () kubernetes.NamedFormat
format.datetime format.datetime () kubernetes.NamedFormat
format.dns1035Label format.dns1035Label () kubernetes.NamedFormat
format.dns1035LabelPrefix format.dns1035LabelPrefix () kubernetes.NamedFormat
format.dns1123Label format.dns1123Label () kubernetes.NamedFormat
format.dns1123LabelPrefix format.dns1123LabelPrefix () kubernetes.NamedFormat
format.dns1123Subdomain format.dns1123Subdomain () kubernetes.NamedFormat
format.dns1123SubdomainPrefix format.dns1123SubdomainPrefix () kubernetes.NamedFormat
format.labelValue format.labelValue () kubernetes.NamedFormat
format.named format-named (string) optional_type(kubernetes.NamedFormat)
format.qualifiedName format.qualifiedName () kubernetes.NamedFormat
format.uri format.uri () kubernetes.NamedFormat
format.uuid format.uuid () kubernetes.NamedFormat
getDate timestamp_to_day_of_month_1_based timestamp.() int
getDate timestamp_to_day_of_month_1_based_with_tz timestamp.(string) int
getDayOfMonth timestamp_to_day_of_month timestamp.() int
getDayOfMonth timestamp_to_day_of_month_with_tz timestamp.(string) int
getDayOfWeek timestamp_to_day_of_week timestamp.() int
getDayOfWeek timestamp_to_day_of_week_with_tz timestamp.(string) int
getDayOfYear timestamp_to_day_of_year timestamp.() int
getDayOfYear timestamp_to_day_of_year_with_tz timestamp.(string) int
getEscapedPath url_get_escaped_path kubernetes.URL.() string
getFullYear timestamp_to_year timestamp.() int
getFullYear timestamp_to_year_with_tz timestamp.(string) int
getHost url_get_host kubernetes.URL.() string
getHostname url_get_hostname kubernetes.URL.() string
getHours timestamp_to_hours timestamp.() int
getHours timestamp_to_hours_with_tz timestamp.(string) int
getHours duration_to_hours duration.() int
getMilliseconds timestamp_to_milliseconds timestamp.() int
getMilliseconds timestamp_to_milliseconds_with_tz timestamp.(string) int
getMilliseconds duration_to_milliseconds duration.() int
getMinutes timestamp_to_minutes timestamp.() int
getMinutes timestamp_to_minutes_with_tz timestamp.(string) int
getMinutes duration_to_minutes duration.() int
getMonth timestamp_to_month timestamp.() int
getMonth timestamp_to_month_with_tz timestamp.(string) int
getPort url_get_port kubernetes.URL.() string
getQuery url_get_query kubernetes.URL.() map(string,list(string))
getScheme url_get_scheme kubernetes.URL.() string
getSeconds timestamp_to_seconds timestamp.() int
getSeconds timestamp_to_seconds_tz timestamp.(string) int
getSeconds duration_to_seconds duration.() int
group authorizer_group kubernetes.authorization.Authorizer.(string) kubernetes.authorization.GroupCheck
hasValue optional_hasValue optional_type(V).() bool
in in_list (A,list(A)) bool
in in_map (A,map(A,B)) bool
indexOf list_a_index_of_int list(A).(A) int
indexOf string_index_of_string string.(string) int
indexOf string_index_of_string_int string.(string,int) int
int int64_to_int64 (int) int
int double_to_int64 (double) int
int duration_to_int64 (duration) int
int string_to_int64 (string) int
int timestamp_to_int64 (timestamp) int
int uint64_to_int64 (uint) int
ip string_to_ip (string) net.IP
ip cidr_ip net.CIDR.() net.IP
ip.isCanonical ip_is_canonical (string) bool
isCIDR is_cidr (string) bool
isGlobalUnicast ip_is_global_unicast net.IP.() bool
isGreaterThan quantity_is_greater_than kubernetes.Quantity.(kubernetes.Quantity) bool
isGreaterThan semver_is_greater_than kubernetes.Semver.(kubernetes.Semver) bool
isIP is_ip (string) bool
isInteger quantity_is_integer kubernetes.Quantity.() bool
isLessThan quantity_is_less_than kubernetes.Quantity.(kubernetes.Quantity) bool
isLessThan semver_is_less_than kubernetes.Semver.(kubernetes.Semver) bool
isLinkLocalMulticast ip_is_link_local_multicast net.IP.() bool
isLinkLocalUnicast ip_is_link_local_unicast net.IP.() bool
isLoopback ip_is_loopback net.IP.() bool
isQuantity is_quantity_string (string) bool
isSemver is_semver_string (string) bool
isSemver is_semver_string_bool (string,bool) bool
isSorted list_int_is_sorted_bool list(int).() bool
isSorted list_uint_is_sorted_bool list(uint).() bool
isSorted list_double_is_sorted_bool list(double).() bool
isSorted list_bool_is_sorted_bool list(bool).() bool
isSorted list_duration_is_sorted_bool list(duration).() bool
isSorted list_timestamp_is_sorted_bool list(timestamp).() bool
isSorted list_string_is_sorted_bool list(string).() bool
isSorted list_bytes_is_sorted_bool list(bytes).() bool
isURL is_url_string (string) bool
isUnspecified ip_is_unspecified net.IP.() bool
join list_join list(string).() string
join list_join_string list(string).(string) string
labelSelector authorizer_labelselector kubernetes.authorization.ResourceCheck.(string) kubernetes.authorization.ResourceCheck
last list_last list(V).() optional_type(V)
lastIndexOf list_a_last_index_of_int list(A).(A) int
lastIndexOf string_last_index_of_string string.(string) int
lastIndexOf string_last_index_of_string_int string.(string,int) int
lists.range lists_range (int) list(int)
lowerAscii string_lower_ascii string.() string
major semver_major kubernetes.Semver.() int
masked cidr_masked net.CIDR.() net.CIDR
matches matches (string,string) bool
matches matches_string string.(string) bool
max list_int_max_int list(int).() int
max list_uint_max_uint list(uint).() uint
max list_double_max_double list(double).() double
max list_bool_max_bool list(bool).() bool
max list_duration_max_duration list(duration).() duration
max list_timestamp_max_timestamp list(timestamp).() timestamp
max list_string_max_string list(string).() string
max list_bytes_max_bytes list(bytes).() bytes
min list_int_min_int list(int).() int
min list_uint_min_uint list(uint).() uint
min list_double_min_double list(double).() double
min list_bool_min_bool list(bool).() bool
min list_duration_min_duration list(duration).() duration
min list_timestamp_min_timestamp list(timestamp).() timestamp
min list_string_min_string list(string).() string
min list_bytes_min_bytes list(bytes).() bytes
minor semver_minor kubernetes.Semver.() int
name resourcecheck_name kubernetes.authorization.ResourceCheck.(string) kubernetes.authorization.ResourceCheck
namespace resourcecheck_namespace kubernetes.authorization.ResourceCheck.(string) kubernetes.authorization.ResourceCheck
optional.none optional_none () optional_type(V)
optional.of optional_of (V) optional_type(V)
optional.ofNonZeroValue optional_ofNonZeroValue (V) optional_type(V)
optional.unwrap optional_unwrap (list(optional_type(V))) list(V)
or optional_or_optional optional_type(V).(optional_type(V)) optional_type(V)
orValue optional_orValue_value optional_type(V).(V) V
patch semver_patch kubernetes.Semver.() int
path authorizer_path kubernetes.authorization.Authorizer.(string) kubernetes.authorization.PathCheck
prefixLength cidr_prefix_length net.CIDR.() int
quantity string_to_quantity (string) kubernetes.Quantity
reason decision_reason kubernetes.authorization.Decision.() string
replace string_replace_string_string string.(string,string) string
replace string_replace_string_string_int string.(string,string,int) string
resource groupcheck_resource kubernetes.authorization.GroupCheck.(string) kubernetes.authorization.ResourceCheck
reverse list_reverse list(T).() list(T)
semver string_to_semver (string) kubernetes.Semver
semver string_bool_to_semver (string,bool) kubernetes.Semver
serviceAccount authorizer_serviceaccount kubernetes.authorization.Authorizer.(string,string) kubernetes.authorization.Authorizer
sets.contains list_sets_contains_list (list(T),list(T)) bool
sets.equivalent list_sets_equivalent_list (list(T),list(T)) bool
sets.intersects list_sets_intersects_list (list(T),list(T)) bool
sign quantity_sign (kubernetes.Quantity) int
size size_bytes (bytes) int
size bytes_size bytes.() int
size size_list (list(A)) int
size list_size list(A).() int
size size_map (map(A,B)) int
size map_size map(A,B).() int
size size_string (string) int
size string_size string.() int
slice list_slice list(T).(int,int) list(T)
sort list_int_sort list(int).() list(int)
sort list_uint_sort list(uint).() list(uint)
sort list_double_sort list(double).() list(double)
sort list_bool_sort list(bool).() list(bool)
sort list_google.protobuf.Duration_sort list(duration).() list(duration)
sort list_google.protobuf.Timestamp_sort list(timestamp).() list(timestamp)
sort list_string_sort list(string).() list(string)
sort list_bytes_sort list(bytes).() list(bytes)
split string_split_string string.(string) list(string)
split string_split_string_int string.(string,int) list(string)
startsWith starts_with_string string.(string) bool
string string_to_string (string) string
string bool_to_string (bool) string
string bytes_to_string (bytes) string
string double_to_string (double) string
string duration_to_string (duration) string
string int64_to_string (int) string
string timestamp_to_string (timestamp) string
string uint64_to_string (uint) string
string ip_to_string (net.IP) string
string cidr_to_string (net.CIDR) string
strings.quote strings_quote (string) string
sub quantity_sub kubernetes.Quantity.(kubernetes.Quantity) kubernetes.Quantity
sub quantity_sub_int kubernetes.Quantity.(int) kubernetes.Quantity
subresource resourcecheck_subresource kubernetes.authorization.ResourceCheck.(string) kubernetes.authorization.ResourceCheck
substring string_substring_int string.(int) string
substring string_substring_int_int string.(int,int) string
sum list_int_sum_int list(int).() int
sum list_uint_sum_uint list(uint).() uint
sum list_double_sum_double list(double).() double
sum list_duration_sum_duration list(duration).() duration
timestamp timestamp_to_timestamp (timestamp) timestamp
timestamp int64_to_timestamp (int) timestamp
timestamp string_to_timestamp (string) timestamp
trim string_trim string.() string
type type (A) type(A)
uint uint64_to_uint64 (uint) uint
uint double_to_uint64 (double) uint
uint int64_to_uint64 (int) uint
uint string_to_uint64 (string) uint
unwrapOpt optional_unwrapOpt list(optional_type(V)).() list(V)
upperAscii string_upper_ascii string.() string
url string_to_url (string) kubernetes.URL
validate format-validate kubernetes.NamedFormat.(string) optional_type(list(string))
value optional_value optional_type(V).() V
"""


def _overloads() -> dict[str, list[Overload]]:
    out: dict[str, list[Overload]] = {}
    for line in DECLARATIONS.strip().splitlines():
        name, overload_id, signature, result = line.split(" ")
        member = not signature.startswith("(")
        receiver, _, args = signature.rpartition(".(") if member else ("", "", signature[1:])
        arg_types = [_parse_type(a) for a in _split_args(args[:-1])]
        if member:
            arg_types.insert(0, _parse_type(receiver))
        result_type = _parse_type(result)
        params = frozenset(p for t in (*arg_types, result_type) for p in _params_in(t))
        out.setdefault(name, []).append(Overload(overload_id, member, tuple(arg_types), result_type, params))
    return out


def _split_args(text: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    if text:
        out.append(text[start:])
    return out


def _params_in(t: Type) -> Iterator[Type]:
    if t.kind == "param":
        yield t
    for p in t.params:
        yield from _params_in(p)


FUNCTIONS: dict[str, list[Overload]] = _overloads()

#: The type identifiers cel-go's standard environment declares (``type(x) == string``).
_TYPE_IDENTS = {
    "bool": BOOL,
    "bytes": BYTES,
    "double": DOUBLE,
    "google.protobuf.Duration": DURATION,
    "int": INT,
    "list": list_of(_param("A")),
    "map": map_of(_param("A"), _param("B")),
    "null_type": NULL,
    "string": STRING,
    "google.protobuf.Timestamp": TIMESTAMP,
    "type": TYPE,
    "uint": UINT,
    "optional_type": optional_of(_param("T")),
}

# ---------------------------------------------------------------------------------------------------------
# the schema's declared types (apiserver cel/common/schemas.go, cel/types.go)
# ---------------------------------------------------------------------------------------------------------

#: The largest request the API server accepts (``MaxRequestSizeBytes``), from which unbounded sizes follow.
MAX_REQUEST_BYTES = 3 * 1024 * 1024
_MAX_DURATION_JSON = 32
_MAX_DATETIME_JSON = 32
_JSON_DATE = 12
_MIN_DATETIME_JSON = 21
_MIN_DURATION_JSON = 3
_MIN_STRING = 2


@dataclass(eq=False)
class Decl:
    """A schema node as CEL declares it (``apiservercel.DeclType``): its CEL type, the most elements
    (characters, bytes, items or properties) the API server estimates it holds, and its smallest serialized
    size in bytes."""

    type: Type
    max_elements: int = 0
    min_size: int = 1
    fields: dict[str, Decl] | None = None
    elem: Decl | None = None
    key: Decl | None = None


def bound(schema: Mapping[str, Any], key: str) -> int | None:
    """``schema[key]`` (``maxLength``, ``maxItems``, ``maxProperties``), negative as 0 (``zeroIfNegative``);
    None when it is absent, or not an integer (a schema the API server refuses for it)."""
    value = schema.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        return None
    return max(int(value), 0)


def _with_type_and_object_meta(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``WithTypeAndObjectMeta``: a resource's ``kind``, ``apiVersion`` and
    ``metadata.name``/``generateName``, which rules may always read."""
    props = schema.get("properties")
    meta = (props or {}).get("metadata") or {}
    meta_props = meta.get("properties") or {}
    if (
        props
        and (props.get("kind") or {}).get("type") == "string"
        and (props.get("apiVersion") or {}).get("type") == "string"
        and meta.get("type") == "object"
        and meta_props
        and (meta_props.get("name") or {}).get("type") == "string"
        and (meta_props.get("generateName") or {}).get("type") == "string"
    ):
        return schema
    string = {"type": "string"}
    return {
        **schema,
        "properties": {
            **(props or {}),
            "kind": string,
            "apiVersion": string,
            "metadata": {"type": "object", "properties": {"name": string, "generateName": string}},
        },
    }


def _string_decl(schema: Mapping[str, Any]) -> Decl:
    fmt = schema.get("format")
    max_length = bound(schema, "maxLength")
    unbounded = MAX_REQUEST_BYTES - 2
    if fmt == "byte":
        limit = max_length if max_length is not None else unbounded
        return Decl(BYTES, limit, _MIN_STRING)
    if fmt == "duration":
        return Decl(DURATION, _MAX_DURATION_JSON, _MIN_DURATION_JSON)
    if fmt == "date":
        return Decl(TIMESTAMP, _JSON_DATE, _JSON_DATE)
    if fmt == "date-time":
        return Decl(TIMESTAMP, _MAX_DATETIME_JSON, _MIN_DATETIME_JSON)
    if max_length is not None:
        limit = max_length * 4  # maxLength counts characters, of up to 4 bytes each
    elif schema.get("enum"):
        limit = max((len(v.encode()) for v in schema["enum"] if isinstance(v, str)), default=0)
    else:
        limit = unbounded
    return Decl(STRING, limit, _MIN_STRING)


#: The name the API server gives the type of a rule's node (``selfType`` and the clock's nanoseconds: its
#: messages differ there from one creation to the next).
SELF_TYPE = "selfType0"


def schema_decl(schema: Mapping[str, Any], resource_root: bool, name: str = SELF_TYPE) -> Decl | None:
    """``SchemaDeclType``: the declared type of ``schema`` (None where CEL cannot see it), its objects named
    after their place under ``name`` as the API server names them (``MaybeAssignTypeName``)."""
    if schema.get("x-kubernetes-int-or-string"):
        max_length = bound(schema, "maxLength")
        limit = max_length * 4 if max_length is not None else MAX_REQUEST_BYTES - 2
        return Decl(DYN, limit, 1)
    if resource_root:
        schema = _with_type_and_object_meta(schema)
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        # A list item's smallest serialized size is its own and a comma.
        elem = _element(schema, items, "maxItems", 1, f"{name}.@idx") if isinstance(items, Mapping) else None
        return Decl(list_of(elem[0].type), elem[1], 2, elem=elem[0]) if elem is not None else None
    if kind == "object":
        addl = schema.get("additionalProperties")
        if isinstance(addl, Mapping):
            # A map entry's: its value's, a two-character key, quotes, colon and comma.
            elem = _element(schema, addl, "maxProperties", 6, f"{name}.@elem")
            if elem is None:
                return None
            return Decl(
                map_of(STRING, elem[0].type), elem[1], 2, elem=elem[0], key=Decl(STRING, 0, _MIN_STRING)
            )
        required = set(schema.get("required") or ())
        fields: dict[str, Decl] = {}
        min_size = 2
        for prop, sub in (schema.get("properties") or {}).items():
            if not isinstance(sub, Mapping):
                continue
            cel_name = crd_cel.escape_property(prop)
            decl = schema_decl(
                sub, bool(sub.get("x-kubernetes-embedded-resource")), f"{name}.{cel_name or prop}"
            )
            if decl is None:
                continue
            if cel_name is not None:
                fields[cel_name] = decl
            if prop in required and sub.get("default") is None:
                min_size += len(prop.encode()) + decl.min_size + 4
        return Decl(Type("struct", name), 0, min_size, fields=fields)
    if kind == "string":
        return _string_decl(schema)
    if kind == "boolean":
        return Decl(BOOL, 0, 4)
    if kind == "number":
        return Decl(DOUBLE, 0, 1)
    if kind == "integer":
        return Decl(INT, 0, 1)
    return None


def renamed(decl: Decl, name: str = SELF_TYPE) -> Decl:
    """``decl`` with its object types named after ``name`` (``MaybeAssignTypeName``): the API server names the
    type of every node it compiles rules at afresh, whatever its ancestors' rules named it."""
    if decl.fields is not None:
        fields = {k: renamed(v, f"{name}.{k}") for k, v in decl.fields.items()}
        return Decl(Type("struct", name), decl.max_elements, decl.min_size, fields=fields)
    if decl.elem is not None:
        if decl.type.kind == "list":
            elem = renamed(decl.elem, f"{name}.@idx")
            return Decl(list_of(elem.type), decl.max_elements, decl.min_size, elem=elem)
        elem = renamed(decl.elem, f"{name}.@elem")
        return Decl(map_of(STRING, elem.type), decl.max_elements, decl.min_size, elem=elem, key=decl.key)
    return decl


def _element(
    schema: Mapping[str, Any], child: Mapping[str, Any], limit_key: str, overhead: int, name: str
) -> tuple[Decl, int] | None:
    """A list's items or a map's values, and how many the API server estimates there are: ``limit_key``
    (``maxItems``/``maxProperties``) when set, else as many of the smallest as fit in the largest request."""
    elem = schema_decl(child, bool(child.get("x-kubernetes-embedded-resource")), name)
    if elem is None:
        return None
    most = bound(schema, limit_key)
    count = most if most is not None else (MAX_REQUEST_BYTES - 2) // (elem.min_size + overhead)
    return elem, count


def _structs(decl: Decl, into: dict[str, Decl]) -> dict[str, Decl]:
    """Every object type under ``decl``, by name."""
    if decl.fields is not None:
        into[decl.type.name] = decl
        for sub in decl.fields.values():
            _structs(sub, into)
    if decl.elem is not None:
        _structs(decl.elem, into)
    return into


# ---------------------------------------------------------------------------------------------------------
# parsing (cel-expr-python's parser: cel-go's grammar and macros)
# ---------------------------------------------------------------------------------------------------------


class CheckError(ValueError):
    """The rule does not parse or type-check here: ``str()`` is the first error's message, :attr:`display` all
    of them as cel-go's ``Issues.String()`` shows them (``ERROR: <input>:1:8: ...``, the line, a caret)."""

    def __init__(self, message: str, display: str | None = None) -> None:
        super().__init__(message)
        self.display = display if display is not None else message


@dataclass(frozen=True)
class _Source:
    """A parsed expression's text and where each of its expressions starts (cel-go ``common.Source``)."""

    text: str
    positions: dict[int, int]
    line_offsets: list[int]

    def location(self, expr_id: int) -> tuple[int, int]:
        """(line, 0-based column) of the expression ``expr_id``, in code points; (-1, -1) when unknown."""
        offset = self.positions.get(expr_id)
        if offset is None:
            return -1, -1
        line, start = 1, 0
        for line_start in self.line_offsets:
            if line_start > offset:
                break
            line, start = line + 1, line_start
        return line, offset - start

    def display(self, issues: list[tuple[int, str]]) -> str:
        """``issues`` (expression id, message) as cel-go's ``Errors.ToDisplayString`` writes them: sorted by
        location, each with its line and a caret under the column."""
        located = sorted(((self.location(i), m) for i, m in issues), key=lambda e: e[0])
        lines = self.text.split("\n")
        out = []
        for (line, column), message in located[:_MAX_ERRORS]:
            text = f"ERROR: <input>:{line}:{column + 1}: {message}"
            if 1 <= line <= len(lines) and len(lines[line - 1].encode()) <= _MAX_SNIPPET:
                snippet = lines[line - 1].replace("\t", " ")
                dots = "".join("\uff0e" if len(ch.encode()) > 1 else "." for ch in snippet[:column])
                caret = "\uff3e" if len(snippet[column : column + 1].encode()) > 1 else "^"
                text += f"\n | {snippet}\n | {dots}{caret}"
            out.append(text)
        if len(located) > _MAX_ERRORS:
            out.append(f"{len(located) - _MAX_ERRORS} more errors were truncated")
        return "\n".join(out)


#: cel-go's limits of an error report: errors shown, bytes of a line shown.
_MAX_ERRORS = 100
_MAX_SNIPPET = 16384


@cache
def _parser() -> Any:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_optional

    config = 'extensions:\n  - name: "two-var-comprehensions"\n  - name: "lists"\n'
    return cel.NewEnv(config=cel.NewEnvConfigFromYaml(config), extensions=[ext_optional.ExtOptional()])


ACCUMULATOR = "@result"


class _Ids:
    """Fresh expression ids for the macros expanded here, above those the parser gave."""

    def __init__(self, start: int) -> None:
        self.next = start

    def __call__(self) -> int:
        self.next += 1
        return self.next


def _max_id(node: Node) -> int:
    return max((n.id for n in _nodes(node)), default=0)


def _nodes(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children():
        yield from _nodes(child)


def _expand(node: Node, ids: _Ids) -> Node:
    """cel-go's two-variable ``exists_one(k, v, p)`` macro, which cel-expr-python's parser leaves as a call
    (``existsOne(x, p)``, which cel-expr-python does not expand either, is no macro of the API server's)."""
    for attr in ("target", "iter_range", "accu_init", "condition", "step", "result"):
        child = getattr(node, attr)
        if child is not None:
            setattr(node, attr, _expand(child, ids))
    node.args = [_expand(a, ids) for a in node.args]
    for entry in node.entries:
        if entry.key is not None:
            entry.key = _expand(entry.key, ids)
        entry.value = _expand(entry.value, ids)
    if node.kind != "call" or node.target is None:
        return node
    if node.name != "exists_one" or len(node.args) != 3 or any(a.kind != "ident" for a in node.args[:-1]):
        return node
    names = [a.name for a in node.args[:-1]]
    if ACCUMULATOR in names or "__result__" in names:
        raise CheckError("iteration variable overwrites accumulator variable")

    def accu() -> Node:
        return Node(ids(), "ident", name=ACCUMULATOR)

    def one() -> Node:
        return Node(ids(), "literal", value=1, literal="int")

    step = Node(
        ids(),
        "call",
        name="_?_:_",
        args=[node.args[-1], Node(ids(), "call", name="_+_", args=[accu(), one()]), accu()],
    )
    return Node(
        ids(),
        "comprehension",
        iter_var=names[0],
        iter_var2=names[1],
        accu_var=ACCUMULATOR,
        iter_range=node.target,
        accu_init=Node(ids(), "literal", value=0, literal="int"),
        condition=Node(ids(), "literal", value=True, literal="bool"),
        step=step,
        result=Node(ids(), "call", name="_==_", args=[accu(), one()]),
    )


def parse(expression: str) -> Node:
    """The tree of ``expression`` after macro expansion, as cel-go's parser builds it."""
    return _parse(expression)[0]


_STATUS = re.compile(r"^[A-Z_]+: (ERROR: .*?)(?: \[[A-Z_]+\])?$", re.DOTALL)


def _parse(expression: str) -> tuple[Node, _Source]:
    try:
        serialized = _parser().compile(expression, disable_check=True).serialize()
    except (
        Exception
    ) as e:  # the binding raises with the parser's words, as cel-go's Issues.String() writes them
        words = str(e)
        found = _STATUS.match(words)
        display = found.group(1) if found else " ".join(words.split())
        raise CheckError(" ".join(display.split("\n")[0].split()), display) from None
    tree = parsed_tree(serialized)
    positions, line_offsets = source_positions(serialized)
    return _expand(tree, _Ids(_max_id(tree))), _Source(expression, positions, line_offsets)


# ---------------------------------------------------------------------------------------------------------
# the checker (cel-go checker/checker.go)
# ---------------------------------------------------------------------------------------------------------

_LITERAL_TYPES = {
    "null": NULL,
    "bool": BOOL,
    "int": INT,
    "uint": UINT,
    "double": DOUBLE,
    "string": STRING,
    "bytes": BYTES,
}


@dataclass
class Checked:
    """A type-checked rule: its tree (rewritten as cel-go rewrites it: namespaced functions called globally),
    the type of every expression and the overloads of every call, by expression id."""

    tree: Node
    types: dict[int, Type]
    overloads: dict[int, list[str]]
    structs: dict[str, Decl] = field(default_factory=dict)


class _Checker:
    def __init__(self, variables: dict[str, Type], structs: dict[str, Decl]) -> None:
        self.scopes: list[dict[str, Type]] = [variables]
        self.structs = structs
        self.types: dict[int, Type] = {}
        self.overloads: dict[int, list[str]] = {}
        self.mapping: Mapping_ = {}
        self.free = 0
        #: (expression id, message), in the order cel-go's checker reports them.
        self.errors: list[tuple[int, str]] = []

    # -- environment

    def lookup_ident(self, name: str) -> Type | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in _TYPE_IDENTS:
            return type_of(_TYPE_IDENTS[name])
        return None

    def error(self, node: Node, message: str) -> None:
        self.errors.append((node.id, message))

    def set_type(self, node: Node, t: Type) -> None:
        old = self.types.get(node.id)
        if old is not None and old != t:
            self.error(node, f"incompatible type already exists for expression: {old} vs {t}")
            return
        self.types[node.id] = t

    def sub(self, t: Type, to_dyn: bool = False) -> Type:
        return _substitute(self.mapping, t, to_dyn)

    def new_var(self) -> Type:
        self.free += 1
        return _param(f"_var{self.free - 1}")

    def assignable(self, t1: Type, t2: Type) -> bool:
        found = _assignable(self.mapping, t1, t2)
        if found is None:
            return False
        self.mapping = found
        return True

    # -- expressions

    def check(self, node: Node) -> None:
        kind = node.kind
        if kind == "literal":
            self.set_type(node, _LITERAL_TYPES[node.literal])
        elif kind == "ident":
            self.check_ident(node)
        elif kind == "select":
            self.check_select(node)
        elif kind == "call":
            self.check_call(node)
        elif kind == "list":
            self.check_list(node)
        elif kind == "map":
            self.check_map(node)
        elif kind == "comprehension":
            self.check_comprehension(node)
        else:
            self.error(node, _undeclared(node.name))
            self.set_type(node, ERROR)

    def check_ident(self, node: Node) -> None:
        t = self.lookup_ident(node.name)
        if t is None:
            self.error(node, _undeclared(node.name))
            self.set_type(node, ERROR)
            return
        self.set_type(node, t)

    def check_select(self, node: Node) -> None:
        qualified = _qualified_name(node)
        if qualified is not None and self.lookup_ident(qualified) is not None:
            t = self.lookup_ident(qualified)
            assert t is not None
            node.kind, node.name, node.target = "ident", qualified, None
            self.set_type(node, t)
            return
        assert node.target is not None
        result = self.check_select_field(node, node.target, node.name, False)
        if node.test_only:
            result = BOOL
        self.set_type(node, self.sub(result))

    def check_select_field(self, node: Node, operand: Node, name: str, optional: bool) -> Type:
        self.check(operand)
        target, is_opt = _unwrap_optional(self.sub(self.types[operand.id]))
        result = ERROR
        if target.kind == "map":
            result = target.params[1]
        elif target.kind == "struct":
            decl = self.structs.get(target.name)
            field_decl = decl.fields.get(name) if decl is not None and decl.fields is not None else None
            if field_decl is None:
                self.error(node, f"undefined field '{name}'")
            else:
                result = field_decl.type
        elif target.kind == "param":
            self.assignable(DYN, target)
            result = DYN
        else:
            if not _is_dyn_or_error(target):
                self.error(node, f"type '{target}' does not support field selection")
            result = DYN
        return optional_of(result) if is_opt or optional else result

    def check_call(self, node: Node) -> None:
        name = node.name
        if name == "_?._":
            self.check_opt_select(node)
            return
        for arg in node.args:
            self.check(arg)
        if node.target is None:
            overloads = FUNCTIONS.get(name)
            if overloads is None:
                self.error(node, _undeclared(name))
                self.set_type(node, ERROR)
                return
            self.resolve(node, name, overloads, None)
            return
        qualified = _qualified_name(node.target)
        if qualified is not None and f"{qualified}.{name}" in FUNCTIONS:
            node.name, node.target = f"{qualified}.{name}", None
            self.resolve(node, node.name, FUNCTIONS[node.name], None)
            return
        self.check(node.target)
        overloads = FUNCTIONS.get(name)
        if overloads is None:
            self.error(node, _undeclared(name))
            self.set_type(node, ERROR)
            return
        self.resolve(node, name, overloads, node.target)

    def check_opt_select(self, node: Node) -> None:
        if len(node.args) != 2 or node.target is not None:
            self.error(node, "unsupported optional field selection: incorrect signature")
            self.set_type(node, ERROR)
            return
        field_node = node.args[1]
        if field_node.kind != "literal" or field_node.literal != "string":
            self.error(field_node, "unsupported optional field selection")
            self.set_type(node, ERROR)
            return
        result = self.check_select_field(node, node.args[0], str(field_node.value), True)
        self.set_type(node, self.sub(result))
        self.overloads[node.id] = ["select_optional_field"]

    def resolve(self, node: Node, name: str, overloads: list[Overload], target: Node | None) -> None:
        arg_types = ([self.types[target.id]] if target is not None else []) + [
            self.types[a.id] for a in node.args
        ]
        result: Type | None = None
        ids: list[str] = []
        for overload in overloads:
            if (target is None) == overload.member:
                continue
            if name in ("_&&_", "_||_"):
                failed = False
                for arg, t in zip(node.args, arg_types, strict=True):
                    if not self.assignable(t, BOOL):
                        self.error(arg, f"expected type 'bool' but found '{t}'")
                        failed = True
                if failed:
                    self.set_type(node, ERROR)
                    return
                self.overloads[node.id] = [overload.id]
                self.set_type(node, BOOL)
                return
            args, returns = list(overload.args), overload.result
            if overload.params:
                fresh = {p: self.new_var() for p in sorted(overload.params, key=lambda p: p.name)}
                args = [_substitute(fresh, a, False) for a in args]
                returns = _substitute(fresh, returns, False)
            found = _assignable_list(self.mapping, arg_types, args)
            if found is None:
                continue
            self.mapping = found
            ids.append(overload.id)
            fn_result = self.sub(returns)
            if result is None:
                result = fn_result
            elif not _is_dyn(result) and fn_result != result:
                result = DYN
        if result is None:
            shown = [str(self.sub(t, True)) for t in arg_types]
            signature = (
                f"{shown[0]}.({', '.join(shown[1:])})" if target is not None else f"({', '.join(shown)})"
            )
            self.error(node, f"found no matching overload for '{name}' applied to '{signature}'")
            self.set_type(node, ERROR)
            return
        self.overloads[node.id] = ids
        self.set_type(node, result)

    def check_list(self, node: Node) -> None:
        elems: Type | None = None
        for i, elem in enumerate(node.args):
            self.check(elem)
            t = self.types[elem.id]
            if i in node.optional:
                t, is_opt = _unwrap_optional(t)
                if not is_opt and not _is_dyn(t):
                    self.error(elem, f"expected type 'optional_type({t})' but found '{t}'")
            elems = self.join(elems, t)
        self.set_type(node, list_of(elems if elems is not None else self.new_var()))

    def check_map(self, node: Node) -> None:
        key_type: Type | None = None
        value_type: Type | None = None
        for entry in node.entries:
            assert entry.key is not None
            self.check(entry.key)
            key_type = self.join(key_type, self.types[entry.key.id])
            self.check(entry.value)
            t = self.types[entry.value.id]
            if entry.optional:
                t, is_opt = _unwrap_optional(t)
                if not is_opt and not _is_dyn(t):
                    self.error(entry.value, f"expected type 'optional_type({t})' but found '{t}'")
            value_type = self.join(value_type, t)
        if key_type is None or value_type is None:
            key_type, value_type = self.new_var(), self.new_var()
        self.set_type(node, map_of(key_type, value_type))

    def join(self, previous: Type | None, current: Type) -> Type:
        if previous is None:
            return current
        if self.assignable(previous, current):
            return _most_general(previous, current)
        # cel-go's checker makes a literal of mixed types dyn; the API server's validator refuses it (below).
        return DYN

    def check_comprehension(self, node: Node) -> None:
        assert node.iter_range and node.accu_init and node.condition and node.step and node.result
        self.check(node.iter_range)
        self.check(node.accu_init)
        range_type = self.sub(self.types[node.iter_range.id])
        accu_type = self.types[node.accu_init.id]
        self.scopes.append({node.accu_var: accu_type})
        var2: Type | None = None
        if range_type.kind == "list":
            var = range_type.params[0]
            if node.iter_var2:
                var, var2 = INT, var
        elif range_type.kind == "map":
            var = range_type.params[0]
            if node.iter_var2:
                var2 = range_type.params[1]
        elif range_type.kind in ("dyn", "error", "param"):
            self.assignable(DYN, range_type)
            var = DYN
            if node.iter_var2:
                var2 = DYN
        else:
            self.error(
                node.iter_range,
                f"expression of type '{range_type}' cannot be range of a comprehension (must be list, map, or "
                "dynamic)",
            )
            var = ERROR
            if node.iter_var2:
                var2 = ERROR
        loop = {node.iter_var: var}
        if node.iter_var2 and var2 is not None:
            loop[node.iter_var2] = var2
        self.scopes.append(loop)
        self.check(node.condition)
        self.assert_type(node.condition, BOOL)
        self.check(node.step)
        self.assert_type(node.step, accu_type)
        self.scopes.pop()
        self.check(node.result)
        self.scopes.pop()
        self.set_type(node, self.sub(self.types[node.result.id]))

    def assert_type(self, node: Node, t: Type) -> None:
        if not self.assignable(t, self.types[node.id]):
            self.error(node, f"expected type '{t}' but found '{self.types[node.id]}'")


def _undeclared(name: str) -> str:
    """cel-go's words for a name the environment lacks (the API server's container is empty)."""
    return f"undeclared reference to '{name}' (in container '')"


def _qualified_name(node: Node) -> str | None:
    if node.kind == "ident":
        return node.name
    if node.kind == "select" and not node.test_only and node.target is not None:
        inner = _qualified_name(node.target)
        return f"{inner}.{node.name}" if inner is not None else None
    return None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check(expression: str, self_decl: Decl, optional_old_self: bool = False) -> Checked:
    """``expression`` type-checked with ``self`` and ``oldSelf`` of ``self_decl``'s type (``oldSelf`` optional
    under ``optionalOldSelf``), as the API server compiles a rule; :class:`CheckError` when it does not
    type-check."""
    tree, source = _parse(expression)
    old = optional_of(self_decl.type) if optional_old_self else self_decl.type
    checker = _Checker({"self": self_decl.type, "oldSelf": old}, _structs(self_decl, {}))
    checker.check(tree)
    if checker.errors:
        raise CheckError(checker.errors[0][1], source.display(checker.errors))
    types = {i: _substitute(checker.mapping, t, True) for i, t in checker.types.items()}
    # The API server's AST validators run once the rule type-checks, each reporting all it finds.
    issues = list(_literal_issues(tree, types)) + list(_homogeneous_issues(tree, types, False))
    issues += list(_format_issues(tree, types))
    if issues:
        raise CheckError(issues[0][1], source.display(issues))
    return Checked(tree, types, checker.overloads, checker.structs)


def _equivalent(a: Type, b: Type) -> bool:
    """cel-go ``IsEquivalentType``: equal but for the names of type parameters."""
    if a.kind != b.kind or len(a.params) != len(b.params):
        return False
    if a.kind != "param" and a.name != b.name:
        return False
    return all(_equivalent(x, y) for x, y in zip(a.params, b.params, strict=True))


Issue = tuple[int, str]


def _nodes_in_order(node: Node) -> Iterator[Node]:
    """Every expression under ``node``, the node first (cel-go's ``MatchDescendants`` order)."""
    yield node
    for child in node.children():
        yield from _nodes_in_order(child)


def _literal_issues(tree: Node, types: dict[int, Type]) -> Iterator[Issue]:
    """``ValidateDurationLiterals``, ``ValidateTimestampLiterals``, ``ValidateRegexLiterals`` (the API server's
    AST validators, ``environment/base.go``): a literal argument the function would refuse, at the argument."""
    for name in ("duration", "timestamp", "matches"):
        for node in _nodes_in_order(tree):
            if node.kind == "call" and node.name == name and node.args:
                literal = node.args[0]
                if literal.kind == "literal" and not _LITERAL_CHECKS[name](literal):
                    yield literal.id, f"invalid {name} argument"


def _homogeneous_issues(node: Node, types: dict[int, Type], in_format: bool) -> Iterator[Issue]:
    """``ValidateHomogeneousAggregateLiterals``: list and map literals of one type each (a list reports its
    first other element, a map each other key and value), except within a ``format`` call."""
    mismatch = "expected type '{0}' but found '{1}'"
    if node.kind == "list" and not in_format:
        first: Type | None = None
        for i, elem in enumerate(node.args):
            t = types.get(elem.id, DYN)
            t = _unwrap_optional(t)[0] if i in node.optional else t
            if first is None:
                first = t
            elif not _equivalent(first, t):
                yield elem.id, mismatch.format(first, t)
                break
    if node.kind == "map" and not in_format:
        key_type: Type | None = None
        value_type: Type | None = None
        for entry in node.entries:
            assert entry.key is not None
            kt = types.get(entry.key.id, DYN)
            vt = types.get(entry.value.id, DYN)
            vt = _unwrap_optional(vt)[0] if entry.optional else vt
            if key_type is None or value_type is None:
                key_type, value_type = kt, vt
                continue
            if not _equivalent(key_type, kt):
                yield entry.key.id, mismatch.format(key_type, kt)
            if not _equivalent(value_type, vt):
                yield entry.value.id, mismatch.format(value_type, vt)
    in_format = in_format or (node.kind == "call" and node.name == "format")
    for child in node.children():
        yield from _homogeneous_issues(child, types, in_format)


def _compiles(literal: Node) -> bool:
    """Whether a ``matches`` pattern (its first argument: the pattern of a member call, the text of a global
    one, as cel-go's validator reads it) is a valid RE2 expression."""
    if literal.literal != "string":
        return True
    try:
        re2_compile(str(literal.value))
    except Exception:  # re2.error
        return False
    return True


def _go_duration(literal: Node) -> bool:
    """Whether a ``duration`` literal is one Go's ``time.ParseDuration`` reads (an integer literal is not
    valid there either: cel-go 0.26's evaluation of ``duration(1)`` fails)."""
    return literal.literal == "string" and is_go_duration(str(literal.value))


def _cel_timestamp(literal: Node) -> bool:
    """Whether a ``timestamp`` literal is one cel-go converts (RFC 3339 as Go reads it, in CEL's range)."""
    return literal.literal != "string" or is_cel_timestamp(str(literal.value))


_LITERAL_CHECKS = {"duration": _go_duration, "timestamp": _cel_timestamp, "matches": _compiles}


# ---------------------------------------------------------------------------------------------------------
# the strings extension's check of literal format strings (cel-go ext/formatting.go, stringFormatValidator)
# ---------------------------------------------------------------------------------------------------------


class _FormatError(Exception):
    def __init__(self, message: str, expr_id: int | None = None) -> None:
        super().__init__(message)
        self.expr_id = expr_id


_CLAUSE_WORDS = {
    "d": "decimal clause can only be used on integers",
    "f": "fixed-point clause can only be used on doubles",
    "e": "scientific clause can only be used on doubles",
    "b": "only integers and bools can be formatted as binary",
    "x": "only integers, byte buffers, and strings can be formatted as hex",
    "o": "octal clause can only be used on integers",
}
#: The kinds each clause takes (a ``dyn`` argument passes every one).
_CLAUSE_KINDS = {
    "d": ("int", "uint"),
    "f": ("double", "string"),
    "e": ("double", "string"),
    "b": ("int", "uint", "bool"),
    "x": ("int", "uint", "string", "bytes"),
    "o": ("int", "uint"),
}
_STRING_KINDS = frozenset(
    {
        "list",
        "map",
        "int",
        "uint",
        "double",
        "bool",
        "string",
        "timestamp",
        "bytes",
        "duration",
        "type",
        "null",
    }
)


def _go_type_name(t: Type) -> str:
    """``Type.TypeName()``: a type's name without its parameters."""
    return t.name


def _format_issues(tree: Node, types: dict[int, Type]) -> Iterator[Issue]:
    """The strings extension's validator: each ``'<literal>'.format([<list literal>])`` whose clauses do not
    take their arguments' types, or that has arguments no clause reads."""
    for node in _nodes_in_order(tree):
        if (
            node.kind != "call"
            or node.name != "format"
            or node.target is None
            or node.target.kind != "literal"
            or node.target.literal != "string"
            or len(node.args) != 1
            or node.args[0].kind != "list"
        ):
            continue
        args = node.args[0].args
        try:
            requested = _check_format(str(node.target.value), args, types)
        except _FormatError as e:
            yield (e.expr_id if e.expr_id is not None else node.id), str(e)
            continue
        if len(args) > requested:
            yield (
                node.id,
                (f"too many arguments supplied to string.format (expected {requested}, got {len(args)})"),
            )


def _kind_ok(t: Type, kinds: tuple[str, ...] | frozenset[str]) -> bool:
    return t.kind == "dyn" or t.kind in kinds


def _check_string_arg(arg: Node, types: dict[int, Type]) -> Node | None:
    """The first expression of ``arg`` (a list or map literal's elements too) the ``%s`` clause does not
    take."""
    if not _kind_ok(types.get(arg.id, DYN), _STRING_KINDS):
        return arg
    children = arg.args if arg.kind == "list" else []
    if arg.kind == "map":
        children = [c for e in arg.entries for c in (e.key, e.value) if c is not None]
    for child in children:
        bad = _check_string_arg(child, types)
        if bad is not None:
            return bad
    return None


def _check_format(text: str, args: list[Node], types: dict[int, Type]) -> int:
    """``parseFormatString`` with the checker's callbacks: how many arguments the clauses read; a
    :class:`_FormatError` worded as cel-go words it where one does not fit."""
    data = text.encode()
    i = arg_index = requested = 0
    while i < len(data):
        if data[i : i + 1] != b"%":
            i += 1
            continue
        if data[i + 1 : i + 2] == b"%":
            i += 2
            continue
        requested += 1
        if i + 1 >= len(data):
            raise _FormatError("unexpected end of string")
        if arg_index >= len(args):
            raise _FormatError(f"index {arg_index} out of range")
        j = i + 1
        if data[j : j + 1] == b".":
            j += 1
            start = j
            while True:
                if j >= len(data):
                    raise _FormatError(
                        "could not parse formatting clause: error while parsing precision: could not find end "
                        "of precision specifier"
                    )
                if not chr(data[j]).isdigit() or data[j] > 0x7F:
                    break
                j += 1
            if start == j:
                raise _FormatError(
                    "could not parse formatting clause: error while parsing precision: error while converting "
                    'precision to integer: strconv.Atoi: parsing "": invalid syntax'
                )
        clause = chr(data[j])
        arg = args[arg_index]
        if clause == "s":
            bad = _check_string_arg(arg, types)
            if bad is not None:
                raise _FormatError(
                    "error during formatting: string clause can only be used on strings, bools, bytes, ints, "
                    "doubles, maps, lists, types, durations, and timestamps, was given "
                    f"{_go_type_name(types.get(bad.id, DYN))}",
                    bad.id,
                )
        elif clause.lower() in _CLAUSE_KINDS:
            kind = clause.lower()
            t = types.get(arg.id, DYN)
            if not _kind_ok(t, _CLAUSE_KINDS[kind]):
                raise _FormatError(
                    f"error during formatting: {_CLAUSE_WORDS[kind]}, was given {_go_type_name(t)}", arg.id
                )
        else:
            raise _FormatError(
                f'could not parse formatting clause: unrecognized formatting clause "{clause}"'
            )
        i = j + 1
        arg_index += 1
    return requested
