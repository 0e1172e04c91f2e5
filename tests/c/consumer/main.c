/* main.c: the smallest program that uses an installed libredlock. */
#include <redlock.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    redlock_options o;
    redlock_options_init(&o);
    printf("libredlock %s\n", redlock_version());
    return strcmp(redlock_strerror(REDLOCK_ENOQUORUM), redlock_strerror(REDLOCK_OK)) == 0;
}
