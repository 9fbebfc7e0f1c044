/* http_hammer.c — test tool: send N malformed PUT /v1/caps requests in a
 * row to an agent over one kept-alive connection (libcurl), cycling through
 * kinds of bad input (broken JSON, wrong types, unknown fields, bad caps,
 * truncated bodies, a wrong token, binary garbage), and print how many
 * answers were 4xx and how many were anything else.
 *
 *   http_hammer URL N TOKEN */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t sink(char *p, size_t s, size_t n, void *u)
{
    (void)p, (void)u;
    return s * n;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: http_hammer URL N TOKEN\n");
        return 2;
    }
    long n = atol(argv[2]);
    static const char *const bodies[] = {
        "{",
        "[]",
        "null",
        "{\"lease_s\":\"x\",\"controller\":\"c\",\"generation\":1}",
        "{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"gpus\":[{\"index\":0,\"cap_w\":"
        "1e9}]}",
        "{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"bogus\":true}",
        "{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"gpus\":[{\"index\":99,\"cap_w\":"
        "300}]}",
        "{\"lease_s\":60,\"controller\":\"c\",\"gener",
        "\x01\x02\xff\xfe garbage",
        ""};
    const size_t nb = sizeof bodies / sizeof *bodies;
    CURL *c = curl_easy_init();
    char url[1024], auth[512], bad_auth[] = "Authorization: Bearer not-the-token-0000000";
    snprintf(url, sizeof url, "%s/v1/caps", argv[1]);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", argv[3]);
    struct curl_slist *h = curl_slist_append(NULL, auth), *hb = curl_slist_append(NULL, bad_auth);
    long c4 = 0, other = 0;
    for (long i = 0; i < n; i++) {
        const char *b = bodies[i % nb];
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, b);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(b));
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, i % 7 == 3 ? hb : h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
        long code = 0;
        if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 400 && code < 500) c4++;
        else other++;
    }
    printf("4xx=%ld other=%ld\n", c4, other);
    curl_slist_free_all(h);
    curl_slist_free_all(hb);
    curl_easy_cleanup(c);
    return 0;
}
