package suggest

// wantSuggested is TestSuggest's expectation, checked by hand against
// the flows: client -> web on http from another namespace, web -> an
// outside address on 443, the DNS kept for both.
const wantSuggested = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  annotations:
    netpol.io/staged: "true"
    netpol.io/suggested-from: |-
      app/client -> shop/web-7d9f-a 8080/tcp (3 times)
      198.18.2.1 -> 198.18.1.2 8080/tcp
  name: client-suggested
  namespace: app
spec:
  egress:
  - ports:
    - port: http
      protocol: TCP
    to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: shop
      podSelector:
        matchLabels:
          app: web
  - ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
    to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: kube-system
      podSelector:
        matchLabels:
          k8s-app: kube-dns
  podSelector:
    matchLabels:
      app: client
  policyTypes:
  - Ingress
  - Egress
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  annotations:
    netpol.io/staged: "true"
    netpol.io/suggested-from: |-
      app/client -> shop/web-7d9f-a 8080/tcp (3 times)
      198.18.2.1 -> 198.18.1.2 8080/tcp
      shop/web-7d9f-b -> 198.18.200.7 443/tcp (2 times)
  name: web-suggested
  namespace: shop
spec:
  egress:
  - ports:
    - port: 443
      protocol: TCP
    to:
    - ipBlock:
        cidr: 198.18.200.7/32
  - ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
    to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: kube-system
      podSelector:
        matchLabels:
          k8s-app: kube-dns
  ingress:
  - from:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: app
      podSelector:
        matchLabels:
          app: client
    ports:
    - port: http
      protocol: TCP
  podSelector:
    matchLabels:
      app: web
  policyTypes:
  - Ingress
  - Egress
`

// wantAdmin is TestSuggestAdmin's expectation, checked by hand against
// the fixture's flows: one AdminNetworkPolicy per workload, priorities 100
// and 101 in the order of the NetworkPolicies, each allowing what was
// observed (the client's egress to web and web's ingress from it by the
// port's name, web's egress to the outside address by number) and the DNS,
// then denying the rest both ways.
const wantAdmin = `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata:
  annotations:
    netpol.io/staged: "true"
    netpol.io/suggested-from: |-
      app/client -> shop/web-7d9f-a 8080/tcp (3 times)
      198.18.2.1 -> 198.18.1.2 8080/tcp
  name: app.client-suggested
spec:
  egress:
  - action: Allow
    name: allow-to-shop/web
    ports:
    - namedPort: http
    to:
    - pods:
        namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: shop
        podSelector:
          matchLabels:
            app: web
  - action: Allow
    name: allow-dns
    ports:
    - portNumber:
        port: 53
        protocol: UDP
    - portNumber:
        port: 53
        protocol: TCP
    to:
    - pods:
        namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: kube-system
        podSelector:
          matchLabels:
            k8s-app: kube-dns
  - action: Deny
    name: deny-everything-else
    to:
    - networks:
      - 0.0.0.0/0
      - ::/0
  ingress:
  - action: Deny
    from:
    - namespaces: {}
    name: deny-everything-else
  priority: 100
  subject:
    pods:
      namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: app
      podSelector:
        matchLabels:
          app: client
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata:
  annotations:
    netpol.io/staged: "true"
    netpol.io/suggested-from: |-
      app/client -> shop/web-7d9f-a 8080/tcp (3 times)
      198.18.2.1 -> 198.18.1.2 8080/tcp
      shop/web-7d9f-b -> 198.18.200.7 443/tcp (2 times)
  name: shop.web-suggested
spec:
  egress:
  - action: Allow
    name: allow-to-198.18.200.7/32
    ports:
    - portNumber:
        port: 443
        protocol: TCP
    to:
    - networks:
      - 198.18.200.7/32
  - action: Allow
    name: allow-dns
    ports:
    - portNumber:
        port: 53
        protocol: UDP
    - portNumber:
        port: 53
        protocol: TCP
    to:
    - pods:
        namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: kube-system
        podSelector:
          matchLabels:
            k8s-app: kube-dns
  - action: Deny
    name: deny-everything-else
    to:
    - networks:
      - 0.0.0.0/0
      - ::/0
  ingress:
  - action: Allow
    from:
    - pods:
        namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: app
        podSelector:
          matchLabels:
            app: client
    name: allow-from-app/client
    ports:
    - namedPort: http
  - action: Deny
    from:
    - namespaces: {}
    name: deny-everything-else
  priority: 101
  subject:
    pods:
      namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: shop
      podSelector:
        matchLabels:
          app: web
`

// wantBaseline is TestSuggestBaseline's expectation, checked by hand
// against twoClients' flows: one subject, the two namespaces; the two
// clients' ingress rules become one (both on http), so do the two
// destinations' egress rules; the outside address keeps its own port.
const wantBaseline = `apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata:
  annotations:
    netpol.io/staged: "true"
    netpol.io/suggested-from: |-
      app/client -> shop/web 8080/tcp
      app/client2 -> shop/api 8080/tcp
      shop/web -> 198.18.200.7 443/tcp
  name: default
spec:
  egress:
  - action: Allow
    name: allow-to-shop/api-and-1-more
    ports:
    - namedPort: http
    to:
    - pods:
        namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: shop
        podSelector:
          matchLabels:
            app: api
    - pods:
        namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: shop
        podSelector:
          matchLabels:
            app: web
  - action: Allow
    name: allow-to-198.18.200.7/32
    ports:
    - portNumber:
        port: 443
        protocol: TCP
    to:
    - networks:
      - 198.18.200.7/32
  - action: Allow
    name: allow-dns
    ports:
    - portNumber:
        port: 53
        protocol: UDP
    - portNumber:
        port: 53
        protocol: TCP
    to:
    - pods:
        namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: kube-system
        podSelector:
          matchLabels:
            k8s-app: kube-dns
  - action: Deny
    name: deny-everything-else
    to:
    - networks:
      - 0.0.0.0/0
      - ::/0
  ingress:
  - action: Allow
    from:
    - pods:
        namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: app
        podSelector:
          matchLabels:
            app: client
    - pods:
        namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: app
        podSelector:
          matchLabels:
            app: client2
    name: allow-from-app/client-and-1-more
    ports:
    - namedPort: http
  - action: Deny
    from:
    - namespaces: {}
    name: deny-everything-else
  subject:
    namespaces:
      matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: In
        values:
        - app
        - shop
`
