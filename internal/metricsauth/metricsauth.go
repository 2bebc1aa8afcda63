// Package metricsauth serves the controller's /metrics only to a client the hub authenticates and
// allows to read it: the bearer token of the request goes to the hub in a TokenReview, the identity
// the hub answers with in a SubjectAccessReview for the request's non-resource URL path and verb.
//
// It does what controller-runtime's filters.WithAuthenticationAndAuthorization does (the filter
// kubebuilder scaffolds), with the client-go typed clients the controller already links. That
// filter builds k8s.io/apiserver's delegating authenticator and authorizer, which bring
// OpenTelemetry, gRPC and the API server's feature gates into the binary: with it the controller's
// binary nearly doubles and an idle controller's resident set grows by about 20 MB (mostly the
// mapped binary), a fifth of the controller's memory budget for two API calls per scrape.
//
// Differences from that filter, on purpose:
//   - A token the hub does not authenticate is answered 401. controller-runtime's answers 500
//     ("Authentication failed"), because k8s.io/apiserver's bearer-token authenticator turns every
//     refused token into an error.
//   - Nothing is cached: each scrape costs one TokenReview and one SubjectAccessReview (a Prometheus
//     scrape every 30s makes that four small requests a minute), and a revoked binding or token
//     stops working at the next scrape (a token after the API server's own 10s cache) instead of
//     after up to five minutes.
//   - Each review is tried once, bounded by reviewTimeout; the scraper tries again at its next
//     scrape. The clients' rate limiters (the controller's --kube-api-qps and --kube-api-burst, one
//     limiter per client, as for controller-runtime's filter) bound what a flood of requests to the
//     metrics port can ask of the hub.
//   - Only the Authorization header carries a token, not the WebSocket subprotocol
//     k8s.io/apiserver also reads: nobody scrapes metrics over a WebSocket.
package metricsauth

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// reviewTimeout bounds each review, as controller-runtime's filter bounds its TokenReviews (10s).
const reviewTimeout = 10 * time.Second

// The identities and group the API server's authenticators use (k8s.io/apiserver's user package).
const (
	anonymousUser      = "system:anonymous"
	authenticatedGroup = "system:authenticated"
	anonymousGroup     = "system:unauthenticated"
)

// FilterProvider is a metricsserver.Options.FilterProvider: it asks the hub that config and
// httpClient reach. The controller's identity needs create on tokenreviews
// (authentication.k8s.io) and subjectaccessreviews (authorization.k8s.io); a scraper needs get on
// the non-resource URL /metrics.
func FilterProvider(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authorization client: %w", err)
	}
	return Filter(authn.TokenReviews(), authz.SubjectAccessReviews()), nil
}

// Filter wraps a handler so that it serves only requests whose bearer token tokens authenticates
// and whose identity access allows the request's verb on its path:
//
//	no or malformed Authorization header, token not authenticated   401 Unauthorized
//	TokenReview failed                                               500 Authentication failed
//	SubjectAccessReview failed                                       500 Authorization for user U failed
//	not allowed                                                      403 Authorization denied for user U
//
// The API errors are logged, not sent to the client.
func Filter(tokens authenticationclient.TokenReviewInterface, access authorizationclient.SubjectAccessReviewInterface) metricsserver.Filter {
	return func(log logr.Logger, handler http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			token, ok := bearerToken(req.Header.Get("Authorization"))
			if !ok {
				log.V(4).Info("Authentication failed: no bearer token")
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			user, refused, err := authenticate(req.Context(), tokens, token)
			if err != nil {
				log.Error(err, "Authentication failed")
				http.Error(w, "Authentication failed", http.StatusInternalServerError)
				return
			}
			if user == nil {
				log.V(4).Info("Authentication failed: the hub did not authenticate the token", "error", refused)
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			// As the API server's authenticator does: whatever runs after this never sees the token.
			req.Header.Del("Authorization")

			review, err := authorize(req.Context(), access, user, req.URL.Path, strings.ToLower(req.Method))
			if err != nil {
				msg := fmt.Sprintf("Authorization for user %s failed", user.Username)
				log.Error(err, msg)
				http.Error(w, msg, http.StatusInternalServerError)
				return
			}
			if !review.Allowed || review.Denied {
				msg := fmt.Sprintf("Authorization denied for user %s", user.Username)
				log.V(4).Info(msg, "reason", review.Reason, "evaluationError", review.EvaluationError)
				http.Error(w, msg, http.StatusForbidden)
				return
			}
			handler.ServeHTTP(w, req)
		}), nil
	}
}

// bearerToken returns the token of an Authorization header "Bearer <token>", parsed as the API
// server parses it (k8s.io/apiserver's bearertoken): the scheme in any case, the token up to the
// next space; false when the header is missing, of another scheme, or the token is empty.
func bearerToken(header string) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(header), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// authenticate returns who the hub says token belongs to; nil and the hub's reason (which may be
// empty) when the hub does not authenticate it; an error when the hub could not be asked.
func authenticate(ctx context.Context, tokens authenticationclient.TokenReviewInterface, token string) (*authenticationv1.UserInfo, string, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("creating a TokenReview: %w", err)
	}
	if !review.Status.Authenticated {
		return nil, review.Status.Error, nil
	}
	user := review.Status.User
	return &user, "", nil
}

// authorize asks the hub whether user may verb the non-resource URL path.
func authorize(ctx context.Context, access authorizationclient.SubjectAccessReviewInterface, user *authenticationv1.UserInfo, path, verb string) (*authorizationv1.SubjectAccessReviewStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	var extra map[string]authorizationv1.ExtraValue
	if user.Extra != nil {
		extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	review, err := access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		UID:                   user.UID,
		Groups:                withAuthenticatedGroup(user.Username, user.Groups),
		Extra:                 extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	return &review.Status, nil
}

// withAuthenticatedGroup adds system:authenticated to the groups of an authenticated user, as the
// API server's authenticators do (k8s.io/apiserver's AuthenticatedGroupAdder): not to the anonymous
// user, nor when either system:authenticated or system:unauthenticated is there already.
func withAuthenticatedGroup(name string, groups []string) []string {
	if name == anonymousUser {
		return groups
	}
	for _, g := range groups {
		if g == authenticatedGroup || g == anonymousGroup {
			return groups
		}
	}
	return append(append(make([]string, 0, len(groups)+1), groups...), authenticatedGroup)
}
