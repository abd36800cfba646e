/**
 * authlib's metadata validators, ported rule by rule so a test can run them without Python:
 * `AuthorizationServerMetadata.validate()` (authlib/oauth2/rfc8414/models.py, RFC 8414 §2) and
 * `OpenIDProviderMetadata.validate()` (authlib/oidc/discovery/models.py, OpenID Connect Discovery
 * 1.0 §3). Each rule is named after the authlib method it ports and gives authlib's error message.
 * One difference: authlib stops at the first failing rule; this runs them all and lists every failure.
 */

type Metadata = Record<string, unknown>;

export interface AuthlibOptions {
  /** The environment variable AUTHLIB_INSECURE_TRANSPORT: every URL counts as secure. */
  insecureTransport: boolean;
}

/** A failed rule: the authlib method and the ValueError it raises. */
export interface RuleFailure {
  rule: string;
  message: string;
}

type Rule = (doc: Metadata, options: AuthlibOptions) => string | undefined;

/** authlib/common/security.py `is_secure_transport`. */
const isSecureTransport = (uri: string, options: AuthlibOptions) => options.insecureTransport || /^(https:\/\/|http:\/\/localhost:)/.test(uri.toLowerCase());
/** authlib/common/urls.py `is_valid_url`: a scheme and a host. */
const isValidUrl = (value: unknown) => typeof value === 'string' && URL.canParse(value) && new URL(value).hostname !== '';
/** Python truthiness of a JSON value (`if not value:`). */
const truthy = (value: unknown) => !(value === undefined || value === null || value === false || value === 0 || value === '' || (Array.isArray(value) && value.length === 0));
const str = (value: unknown) => (typeof value === 'string' ? value : String(value));

/** `validate_array_value`: absent, or a list. */
const arrayValue = (key: string): Rule => (doc) => (doc[key] !== undefined && doc[key] !== null && !Array.isArray(doc[key]) ? `"${key}" MUST be JSON array` : undefined);
/** The optional endpoints: when set, secure transport. */
const secureEndpoint = (key: string): Rule => (doc, options) => (truthy(doc[key]) && !isSecureTransport(str(doc[key]), options) ? `"${key}" MUST use "https" scheme` : undefined);
const validUrl = (key: string): Rule => (doc) => (truthy(doc[key]) && !isValidUrl(doc[key]) ? `"${key}" MUST be a URL` : undefined);
/** The default lists of the `…_supported` properties when the field is absent. */
const listOr = (doc: Metadata, key: string, fallback: string[]) => (doc[key] === undefined || doc[key] === null ? fallback : (doc[key] as string[]));
/** `_validate_alg_values`: a list; required with a JWT client authentication method; never "none". */
const algValues = (key: string, methodsKey: string): Rule => (doc) => {
  const value = doc[key];
  if (truthy(value) && !Array.isArray(value)) return `"${key}" MUST be JSON array`;
  const methods = listOr(doc, methodsKey, ['client_secret_basic']);
  if (methods.some((m) => m === 'private_key_jwt' || m === 'client_secret_jwt') && !truthy(value)) return `"${key}" is required`;
  if (Array.isArray(value) && value.includes('none')) return `the value "none" MUST NOT be used in "${key}"`;
  return undefined;
};
/** The OpenID value sets (display, claim types): when set, a list of known values. */
const valuesIn = (key: string, allowed: string[]): Rule => (doc) => {
  const values = doc[key];
  if (!truthy(values)) return undefined;
  if (!Array.isArray(values)) return `"${key}" MUST be JSON array`;
  return values.every((v) => allowed.includes(v)) ? undefined : `"${key}" contains invalid values`;
};
/** OpenID's `_validate_boolean_value`. */
const booleanValue = (key: string): Rule => (doc) => (key in doc && typeof doc[key] !== 'boolean' ? `"${key}" MUST be boolean` : undefined);

/** AuthorizationServerMetadata, in REGISTRY_KEYS order. */
const RFC8414_RULES: Record<string, Rule> = {
  validate_issuer: (doc, options) => {
    const issuer = doc.issuer;
    if (!truthy(issuer)) return '"issuer" is required';
    if (!isSecureTransport(str(issuer), options)) return '"issuer" MUST use "https" scheme';
    const parsed = URL.canParse(str(issuer)) ? new URL(str(issuer)) : undefined;
    if (parsed && (parsed.search !== '' || parsed.hash !== '')) return '"issuer" has no query or fragment';
    return undefined;
  },
  validate_authorization_endpoint: (doc, options) => {
    const url = doc.authorization_endpoint;
    if (truthy(url)) return isSecureTransport(str(url), options) ? undefined : '"authorization_endpoint" MUST use "https" scheme';
    const grants = listOr(doc, 'grant_types_supported', ['authorization_code', 'implicit']);
    return grants.some((g) => g === 'authorization_code' || g === 'implicit') ? '"authorization_endpoint" is required' : undefined;
  },
  validate_token_endpoint: (doc, options) => {
    const grants = doc.grant_types_supported;
    if (Array.isArray(grants) && grants.length === 1 && grants[0] === 'implicit') return undefined;
    if (!truthy(doc.token_endpoint)) return '"token_endpoint" is required';
    return isSecureTransport(str(doc.token_endpoint), options) ? undefined : '"token_endpoint" MUST use "https" scheme';
  },
  validate_jwks_uri: secureEndpoint('jwks_uri'),
  validate_registration_endpoint: secureEndpoint('registration_endpoint'),
  validate_scopes_supported: arrayValue('scopes_supported'),
  validate_response_types_supported: (doc) => {
    const value = doc.response_types_supported;
    if (!truthy(value)) return '"response_types_supported" is required';
    return Array.isArray(value) ? undefined : '"response_types_supported" MUST be JSON array';
  },
  validate_response_modes_supported: arrayValue('response_modes_supported'),
  validate_grant_types_supported: arrayValue('grant_types_supported'),
  validate_token_endpoint_auth_methods_supported: arrayValue('token_endpoint_auth_methods_supported'),
  validate_token_endpoint_auth_signing_alg_values_supported: algValues('token_endpoint_auth_signing_alg_values_supported', 'token_endpoint_auth_methods_supported'),
  validate_service_documentation: validUrl('service_documentation'),
  validate_ui_locales_supported: arrayValue('ui_locales_supported'),
  validate_op_policy_uri: validUrl('op_policy_uri'),
  validate_op_tos_uri: validUrl('op_tos_uri'),
  validate_revocation_endpoint: secureEndpoint('revocation_endpoint'),
  validate_revocation_endpoint_auth_methods_supported: arrayValue('revocation_endpoint_auth_methods_supported'),
  validate_revocation_endpoint_auth_signing_alg_values_supported: algValues('revocation_endpoint_auth_signing_alg_values_supported', 'revocation_endpoint_auth_methods_supported'),
  validate_introspection_endpoint: secureEndpoint('introspection_endpoint'),
  validate_introspection_endpoint_auth_methods_supported: arrayValue('introspection_endpoint_auth_methods_supported'),
  validate_introspection_endpoint_auth_signing_alg_values_supported: algValues(
    'introspection_endpoint_auth_signing_alg_values_supported',
    'introspection_endpoint_auth_methods_supported',
  ),
  validate_code_challenge_methods_supported: arrayValue('code_challenge_methods_supported'),
};

/**
 * OpenIDProviderMetadata: the first fifteen RFC 8414 keys (its REGISTRY_KEYS leave out revocation,
 * introspection and PKCE as "not defined by OpenID"), jwks_uri made REQUIRED, then the OpenID keys.
 */
const OIDC_RULES: Record<string, Rule> = {
  ...Object.fromEntries(Object.entries(RFC8414_RULES).slice(0, 15)),
  validate_jwks_uri: (doc, options) => (doc.jwks_uri === undefined || doc.jwks_uri === null ? '"jwks_uri" is required' : RFC8414_RULES.validate_jwks_uri(doc, options)),
  validate_acr_values_supported: arrayValue('acr_values_supported'),
  validate_subject_types_supported: (doc) => {
    const values = doc.subject_types_supported;
    if (values === undefined || values === null) return '"subject_types_supported" is required';
    if (!Array.isArray(values)) return '"subject_types_supported" MUST be JSON array';
    return values.every((v) => v === 'pairwise' || v === 'public') ? undefined : '"subject_types_supported" contains invalid values';
  },
  validate_id_token_signing_alg_values_supported: (doc) => {
    const values = doc.id_token_signing_alg_values_supported;
    if (values === undefined || values === null) return '"id_token_signing_alg_values_supported" is required';
    if (!Array.isArray(values)) return '"id_token_signing_alg_values_supported" MUST be JSON array';
    return values.includes('RS256') ? undefined : '"RS256" MUST be included in "id_token_signing_alg_values_supported"';
  },
  validate_id_token_encryption_alg_values_supported: arrayValue('id_token_encryption_alg_values_supported'),
  validate_id_token_encryption_enc_values_supported: arrayValue('id_token_encryption_enc_values_supported'),
  validate_userinfo_signing_alg_values_supported: arrayValue('userinfo_signing_alg_values_supported'),
  validate_userinfo_encryption_alg_values_supported: arrayValue('userinfo_encryption_alg_values_supported'),
  validate_userinfo_encryption_enc_values_supported: arrayValue('userinfo_encryption_enc_values_supported'),
  validate_request_object_signing_alg_values_supported: (doc) => {
    const values = doc.request_object_signing_alg_values_supported;
    if (!truthy(values)) return undefined;
    if (!Array.isArray(values)) return '"request_object_signing_alg_values_supported" MUST be JSON array';
    return values.includes('none') && values.includes('RS256') ? undefined : '"request_object_signing_alg_values_supported" SHOULD support none and RS256';
  },
  validate_request_object_encryption_alg_values_supported: arrayValue('request_object_encryption_alg_values_supported'),
  validate_request_object_encryption_enc_values_supported: arrayValue('request_object_encryption_enc_values_supported'),
  validate_display_values_supported: valuesIn('display_values_supported', ['page', 'popup', 'touch', 'wap']),
  validate_claim_types_supported: valuesIn('claim_types_supported', ['normal', 'aggregated', 'distributed']),
  validate_claims_supported: arrayValue('claims_supported'),
  validate_claims_locales_supported: arrayValue('claims_locales_supported'),
  validate_claims_parameter_supported: booleanValue('claims_parameter_supported'),
  validate_request_parameter_supported: booleanValue('request_parameter_supported'),
  validate_request_uri_parameter_supported: booleanValue('request_uri_parameter_supported'),
  validate_require_request_uri_registration: booleanValue('require_request_uri_registration'),
};

function run(rules: Record<string, Rule>, doc: Metadata, options: AuthlibOptions): RuleFailure[] {
  return Object.entries(rules).flatMap(([rule, check]) => {
    const message = check(doc, options);
    return message === undefined ? [] : [{ rule, message }];
  });
}

/** `AuthorizationServerMetadata(doc).validate()`: every failing rule; [] means authlib accepts the document. */
export const authorizationServerMetadataFailures = (doc: Metadata, options: AuthlibOptions) => run(RFC8414_RULES, doc, options);

/** `OpenIDProviderMetadata(doc).validate()`: every failing rule; [] means authlib accepts the document. */
export const openIdProviderMetadataFailures = (doc: Metadata, options: AuthlibOptions) => run(OIDC_RULES, doc, options);

/** The names of the rules each validator runs, to show a test covers them all. */
export const RULES = { rfc8414: Object.keys(RFC8414_RULES), oidc: Object.keys(OIDC_RULES) };
